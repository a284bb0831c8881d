#include "pipescope/calibrate/profile_fit.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>
#include <utility>

#include "fit_numbers.h"
#include "pipescope/calibrate/attention_fit.h"
#include "pipescope/calibrate/gemm_fit.h"
#include "pipescope/calibrate/losses_fit.h"
#include "pipescope/calibrate/profile_base.h"
#include "pipescope/calibrate/transfer_fit.h"
#include "pipescope/planner/collective_model.h"

namespace pipescope::calibrate {
namespace {

using detail::significant;

std::string gb_per_s(double bytes_per_s) { return significant(bytes_per_s / 1e9, 4) + " GB/s"; }

// "gpu_benchmark on NVIDIA H100 80GB HBM3 (driver 580.65, 2026-11-22)": what every source names.
std::string run_description(const BenchResults& r) {
  std::string text = "pipescope calibration suite on " + r.context_value("gpu_name");
  std::string details;
  auto add = [&](const std::string& label, const std::string& value) {
    if (!value.empty()) details += (details.empty() ? "" : ", ") + label + value;
  };
  add("driver ", r.context_value("driver_version"));
  add("CUDA ", r.context_value("cuda_runtime_version"));
  add("", r.context_value("date"));
  return details.empty() ? text : text + " (" + details + ")";
}

double context_number(const BenchResults& r, const std::string& key) {
  const std::string text = r.context_value(key);
  if (text.empty()) return 0;
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return 0;
  }
}

Status add_gemm(const BenchResults& r, const std::string& source, ProfileFit& out) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> bf16_shapes;
  for (const GemmSample& s : r.gemm) {
    if (s.dtype == "bf16") bf16_shapes.emplace(s.m, s.n, s.k);
  }
  if (bf16_shapes.size() < 2) {
    if (bf16_shapes.size() == 1) {
      out.notes.push_back(
          "the results hold one bf16 GEMM shape, which makes no table; the base's table is kept" +
          std::string(r.sustained.empty() ? "" : " (the shape is the sustained GEMM's reference)"));
    } else if (!r.gemm.empty()) {
      out.notes.emplace_back("GEMM results hold no bf16 shapes; the planner prices bf16, so none are used");
    }
    out.kept_from_base.emplace_back("gemm");
    return Status::Ok();
  }
  GemmFitInputs in{out.gpu.peak_dense_bf16_flops_per_s, static_cast<int64_t>(context_number(r, "sm_count")),
                   "bf16", source};
  auto fit = fit_gemm(r.gemm, in);
  if (!fit.ok()) return fit.error();
  out.profile.gemm_interpolation = fit->interpolation;
  out.profile.gemm = fit->points;
  out.profile.gemm_waves = fit->waves;
  double best = 0;
  for (const auto& p : fit->points) best = std::max(best, p.efficiency);
  FitSection section{"gemm bf16",
                     std::to_string(fit->shapes) + " shapes, best " + significant(best) + " of peak; " +
                         (fit->notes.empty() ? "" : fit->notes.back()),
                     fit->quality};
  out.sections.push_back(std::move(section));
  for (size_t i = 0; i + 1 < fit->notes.size(); ++i) out.notes.push_back(fit->notes[i]);
  // The other dtypes are measured for the report only: the profile prices bf16.
  for (const std::string dtype : {"fp16", "fp8"}) {
    const double peak =
        dtype == "fp8" ? out.gpu.peak_dense_fp8_flops_per_s : out.gpu.peak_dense_bf16_flops_per_s;
    if (peak <= 0) continue;
    auto other = fit_gemm(r.gemm, {peak, 0, dtype, source});
    if (!other.ok()) continue;  // not measured
    double top = 0;
    for (const auto& p : other->points) top = std::max(top, p.efficiency);
    out.sections.push_back(
        {"gemm " + dtype,
         std::to_string(other->shapes) + " shapes, best " + significant(top) + " of the " + dtype + " peak",
         other->quality, false});
  }
  return Status::Ok();
}

Status add_attention(const BenchResults& r, const std::string& source, ProfileFit& out) {
  if (r.attention.empty()) {
    out.kept_from_base.emplace_back("attention forward");
    out.kept_from_base.emplace_back("attention backward");
    return Status::Ok();
  }
  auto fit = fit_attention(r.attention, out.gpu.peak_dense_bf16_flops_per_s, source);
  if (!fit.ok()) return fit.error();
  std::string best;
  for (bool backward : {false, true}) {
    const auto& points = backward ? fit->backward : fit->forward;
    const std::string pass = backward ? "backward" : "forward";
    if (points.empty()) {
      out.kept_from_base.push_back("attention " + pass);
      continue;
    }
    (backward ? out.profile.attention_backward : out.profile.attention_forward) = points;
    double top = 0;
    for (const auto& p : points) top = std::max(top, p.efficiency);
    best += (best.empty() ? "best " : ", ") + pass + " " + significant(top);
  }
  out.sections.push_back(
      {"attention",
       "kernel " + (fit->kernels.empty() ? std::string("unnamed") : fit->kernels) + "; " + best + " of peak",
       fit->quality});
  out.notes.insert(out.notes.end(), fit->notes.begin(), fit->notes.end());
  return Status::Ok();
}

Status add_bandwidths(const BenchResults& r, const std::string& source, ProfileFit& out) {
  const double l2_cache_bytes = context_number(r, "l2_cache_bytes");
  if (l2_cache_bytes <= 0 && !r.bandwidth.empty()) {
    out.notes.emplace_back(
        "the results do not give the L2 cache size: HBM sizes that the cache serves were fitted too");
  }
  auto fits = fit_bandwidths(r.bandwidth, l2_cache_bytes);
  if (!fits.ok()) return fits.error();
  std::vector<double> hbm;
  for (const BandwidthFit& f : *fits) {
    const std::string what = f.name();
    out.sections.push_back(
        {what,
         gb_per_s(f.bytes_per_s()) + ", latency " + significant(f.line.latency_s * 1e6) + " us" +
             (f.cached_sizes > 0
                  ? "; " + std::to_string(f.cached_sizes) + " sizes within twice the L2 left out"
                  : ""),
         f.quality});
    if (f.family == "hbm") hbm.push_back(f.bytes_per_s());
    const auto copy = f.variant == "h2d"   ? planner::CopyKind::kHostToDevice
                      : f.variant == "d2h" ? planner::CopyKind::kDeviceToHost
                                           : planner::CopyKind::kDeviceToDevice;
    if (f.family == "memcpy" && (f.variant == "h2d" || f.variant == "d2h" || f.variant == "d2d")) {
      out.profile.copies[static_cast<size_t>(copy)] = {
          f.line.latency_s, f.bytes_per_s(),
          "fitted: latency + bytes / bandwidth over the memcpy/" + f.variant + " sizes, rms error " +
              significant(f.quality.rms_relative_error * 100, 2) + "%, " + source};
    }
  }
  if (hbm.empty()) {
    out.kept_from_base.emplace_back("memory_bound");
    return Status::Ok();
  }
  std::sort(hbm.begin(), hbm.end());
  const double typical = hbm[hbm.size() / 2];
  double fraction = typical / out.gpu.hbm_bytes_per_s;
  if (fraction > 1) {
    out.notes.push_back("memory-bound kernels reached " + significant(fraction) +
                        "x the datasheet HBM bandwidth (caches at small sizes?); held at 1");
    fraction = 1;
  }
  out.profile.hbm_bandwidth_fraction = {fraction, "measured: median bandwidth of the hbm kernels (" +
                                                      gb_per_s(typical) + ") over the datasheet's " +
                                                      gb_per_s(out.gpu.hbm_bytes_per_s) + ", " + source};
  return Status::Ok();
}

Status add_collectives(const BenchResults& r, const std::string& source, ProfileFit& out) {
  auto fits = fit_collectives(r.collectives, out.notes);
  if (!fits.ok()) return fits.error();
  std::set<std::pair<planner::LinkTier, planner::CollectiveKind>> fitted;
  for (const CollectiveFit& f : *fits) {
    const auto kind = planner::parse_collective_kind(f.kind);
    std::string summary;
    for (const Regime& g : f.regimes) {
      summary += (summary.empty() ? "" : "; ") +
                 std::string(g.max_x > 0 ? "up to " + significant(f.max_bytes(g)) + " B" : "beyond") +
                 ": busbw " + gb_per_s(1 / g.line.seconds_per_unit) + ", latency " +
                 significant(g.line.latency_s * 1e6) + " us";
    }
    const std::string what = f.kind + " " + std::string(planner::link_tier_name(f.tier)) + " " +
                             std::to_string(f.ranks) + " ranks";
    out.sections.push_back({what, summary, f.quality, kind.has_value()});
    if (!kind) continue;
    auto& slot = out.profile.measured_collectives[static_cast<size_t>(f.tier)][static_cast<size_t>(*kind)];
    if (fitted.emplace(f.tier, *kind).second) slot.clear();  // the base's entries give way to this run's
    std::string entry_source = "measured: ";
    entry_source += what;
    entry_source += " on ";
    entry_source += std::to_string(f.nodes);
    entry_source += f.nodes == 1 ? " node, " : " nodes, ";
    entry_source += source;
    planner::MeasuredCollective entry{f.ranks, {}, std::move(entry_source)};
    for (const Regime& g : f.regimes) {
      entry.segments.push_back({f.max_bytes(g), g.line.latency_s, 1 / g.line.seconds_per_unit,
                                "fitted over " + std::to_string(g.points) + " sizes, rms error " +
                                    significant(f.quality.rms_relative_error * 100, 2) +
                                    "% for the whole curve"});
    }
    // A measured entry per rank count; the same count from two node layouts keeps the first.
    auto at =
        std::lower_bound(slot.begin(), slot.end(), entry.ranks,
                         [](const planner::MeasuredCollective& e, int ranks) { return e.ranks < ranks; });
    if (at == slot.end() || at->ranks != entry.ranks) slot.insert(at, std::move(entry));
  }
  for (planner::LinkTier tier : planner::kLinkTiers) {
    for (planner::CollectiveKind kind : planner::kCollectiveKinds) {
      const auto& measured =
          out.profile.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      const std::string name = "collectives " + std::string(planner::link_tier_name(tier)) + " " +
                               std::string(planner::collective_kind_name(kind));
      if (fitted.count({tier, kind}) == 0) {
        out.kept_from_base.push_back(name);
        continue;
      }
      // The single latency + busbw that stands for the kind is never read while measured entries
      // exist; it shows the largest measured group's figures rather than the base's.
      const planner::MeasuredCollective& largest = measured.back();
      planner::CollectiveCost& cost =
          out.profile.collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      cost = planner::CollectiveCost{};
      cost.latency_s = std::max(largest.segments.front().latency_s, 1e-9);
      cost.bus_bandwidth_bytes_per_s = largest.segments.back().bus_bandwidth_bytes_per_s;
      cost.source = "measured: the smallest messages' latency and the largest messages' busbw of the " +
                    std::to_string(largest.ranks) + "-rank entry under 'measured' (which the planner reads)";
    }
  }
  return Status::Ok();
}

// Sustained clocks, the backward passes' layouts and interference (planner::TrainingLosses), after
// the GEMM table: the sustained fraction is taken against it where the results did not measure
// the same shape.
Status add_losses(const BenchResults& r, const std::string& source, ProfileFit& out) {
  planner::TrainingLosses& losses = out.profile.losses;
  auto place = [&](const std::string& what, const std::string& kept_name, std::optional<LossFit> fit,
                   planner::SourcedValue& slot) {
    if (!fit) {
      out.kept_from_base.push_back(kept_name);
      return;
    }
    slot = fit->value;
    out.sections.push_back({what, fit->summary, fit->quality});
  };
  place(
      "sustained clocks", "losses.sustained_gemm_fraction",
      fit_sustained(r.sustained, r.gemm, out.profile, out.gpu.peak_dense_bf16_flops_per_s, source, out.notes),
      losses.sustained_gemm_fraction);
  LayoutFits layouts = fit_layouts(r.gemm_layouts, source, out.notes);
  place("backward layout dgrad", "losses.dgrad_time_ratio", std::move(layouts.dgrad),
        losses.dgrad_time_ratio);
  place("backward layout wgrad", "losses.wgrad_time_ratio", std::move(layouts.wgrad),
        losses.wgrad_time_ratio);
  place("interference gemm", "losses.overlap_gemm_slowdown", fit_interference(r.interference, "gemm", source),
        losses.overlap_gemm_slowdown);
  place("interference memory-bound", "losses.overlap_memory_bound_slowdown",
        fit_interference(r.interference, "memory", source), losses.overlap_memory_bound_slowdown);
  place("launch gaps", "losses.launch_gap_s", fit_launch_gap(r.launch_gaps, source), losses.launch_gap_s);
  EagerFits eager = fit_eager_kernels(r.eager_kernels, losses.launch_gap_s.value,
                                      out.profile.memory_bound_bytes_per_s(out.gpu), source, out.notes);
  place("PyTorch's kernels, fixed time", "losses.eager_kernel_fixed_s", std::move(eager.kernel_fixed),
        losses.eager_kernel_fixed_s);
  place("PyTorch's unvectorized kernels", "losses.unvectorized_bandwidth_fraction",
        std::move(eager.unvectorized), losses.unvectorized_bandwidth_fraction);
  UnfusedAttentionFits unfused =
      fit_unfused_attention(r.unfused_attention, out.profile, out.gpu.peak_dense_bf16_flops_per_s,
                            out.profile.memory_bound_bytes_per_s(out.gpu), source, out.notes);
  place("unfused attention, forward", "losses.unfused_scores_forward_fraction", std::move(unfused.forward),
        losses.unfused_scores_forward_fraction);
  place("unfused attention, backward", "losses.unfused_scores_backward_fraction", std::move(unfused.backward),
        losses.unfused_scores_backward_fraction);
  return Status::Ok();
}

// The communicator's memory from the nccl file with the most ranks: a one-rank communicator
// connects no peer and holds far less than the groups the planner prices.
std::pair<double, int> nccl_buffer_bytes(const BenchResults& r) {
  double bytes = 0;
  int ranks = 0;
  for (const auto& context : r.file_contexts) {
    const auto value = context.find("nccl_buffer_bytes_per_communicator");
    const auto group = context.find("ranks");
    if (value == context.end() || group == context.end()) continue;
    try {
      const int n = std::stoi(group->second);
      const double b = std::stod(value->second);
      if (n > 1 && b > 0 && n > ranks) {
        ranks = n;
        bytes = b;
      }
    } catch (const std::exception&) {
      continue;  // an empty value: NCCL's memory was not readable
    }
  }
  return {bytes, ranks};
}

void add_overheads(const BenchResults& r, const std::string& source, ProfileFit& out) {
  planner::MemoryOverheads& o = out.profile.overheads;
  if (const double bytes = context_number(r, "cuda_context_bytes"); bytes > 0) {
    o.cuda_context_bytes = {bytes, "measured: device memory taken by creating the CUDA context, " + source};
  } else {
    out.kept_from_base.emplace_back("memory_overheads.cuda_context_bytes");
  }
  if (const auto [bytes, ranks] = nccl_buffer_bytes(r); bytes > 0) {
    o.nccl_buffer_bytes_per_communicator = {
        bytes, "measured: device memory taken by one NCCL communicator of " + std::to_string(ranks) +
                   " ranks, " + source};
  } else {
    out.kept_from_base.emplace_back("memory_overheads.nccl_buffer_bytes_per_communicator");
  }
  out.kept_from_base.emplace_back("memory_overheads.allocator_reserve_fraction");
  out.kept_from_base.emplace_back("memory_overheads.memory_headroom_fraction");
}

// What the GPU reported while it worked. A power cap or a thermal or hardware slowdown lowers
// every figure measured then, which the profile would carry into the planner.
void note_device_states(const BenchResults& r, ProfileFit& out) {
  const std::string max_clock = r.context_value("sm_clock_max_mhz");
  for (const DeviceStateSample& s : r.device_states) {
    const std::string when = s.at == "warm"  ? "after the warm-up"
                             : s.at == "end" ? "at the end"
                                             : "at " + s.at;
    std::string text = "GPU " + when + " (" + s.id.file + "): SM clock " + significant(s.sm_clock_mhz, 4) +
                       " MHz" + (max_clock.empty() ? "" : " of " + max_clock) + ", memory clock " +
                       significant(s.memory_clock_mhz, 4) + " MHz, " + significant(s.power_w, 3) + " W, " +
                       significant(s.temperature_c, 3) + " C, clock events: " +
                       (s.clock_event_reasons.empty() ? "unknown" : s.clock_event_reasons);
    if (s.clock_event_reasons.find("power_cap") != std::string::npos ||
        s.clock_event_reasons.find("slowdown") != std::string::npos)
      text += " - the GPU was throttled: what it measured then understates it";
    out.notes.push_back(std::move(text));
  }
}

}  // namespace

Expected<planner::Gpu> results_gpu(const BenchResults& results, const std::string& name) {
  if (!name.empty()) return planner::find_gpu(name);
  const std::string device = results.context_value("gpu_name");
  if (device.empty()) {
    return Error{
        "the benchmark results do not say which GPU they come from (no gpu_name in their context); "
        "name it with --gpu"};
  }
  return planner::identify_gpu(device);
}

Expected<ProfileFit> fit_profile(const BenchResults& results, const FitOptions& options) {
  if (results.empty()) return Error{"the benchmark results hold no calibration measurement"};
  auto gpu = results_gpu(results, options.gpu);
  if (!gpu.ok()) return gpu.error();
  auto base = resolve_base(*gpu, options.base);
  if (!base.ok()) return base.error();

  ProfileFit out;
  out.gpu = *gpu;
  out.profile = base->profile;
  out.base_kind = base->kind;
  out.base_origin = base->origin;
  out.profile.description = "Measured with pipescope calibrate on " + results.context_value("gpu_name") +
                            "; parts nothing measured come from " + base->origin + ".";
  out.notes = results.notes;
  const std::string source = run_description(results);
  for (auto add : {add_gemm, add_attention, add_bandwidths, add_collectives, add_losses}) {
    if (Status s = add(results, source, out); !s.ok()) return s.error();
  }
  if (std::none_of(out.sections.begin(), out.sections.end(),
                   [](const FitSection& s) { return s.in_profile; })) {
    std::string skipped;
    for (const std::string& note : out.notes) skipped += "; " + note;
    return Error{"nothing fitted: the results hold no measurement the profile has a place for" + skipped};
  }
  add_overheads(results, source, out);
  note_device_states(results, out);
  if (base->kind == BaseKind::kDefaults) {
    std::string missing;
    for (const std::string& part : gpu_specific_parts()) {
      if (std::find(out.kept_from_base.begin(), out.kept_from_base.end(), part) != out.kept_from_base.end())
        missing += (missing.empty() ? "" : ", ") + part;
    }
    if (!missing.empty()) {
      return Error{"no calibration profile of " + gpu->name +
                   " to keep what the results do not measure, and they lack " + missing +
                   ": measure them (pipescope calibrate run on all of a node's GPUs, with PyTorch for "
                   "attention) or pass --base NAME|FILE for them (e.g. --base " +
                   std::string(kDefaultsProfile) +
                   "; the profile's sources then say which numbers came from it)"};
    }
  }

  planner::Provenance& p = out.profile.provenance;
  p.gpu_device_name = results.context_value("gpu_name");
  p.driver_version = results.context_value("driver_version");
  p.cuda_runtime_version = results.context_value("cuda_runtime_version");
  p.cublaslt_version = results.context_value("cublaslt_version");
  p.nccl_version = results.context_value("nccl_version");
  p.torch_version = results.context_value("torch_version");
  p.date = results.context_value("date");
  p.host = results.context_value("host_name");
  p.command = options.command;
  p.tool = options.tool;
  return out;
}

}  // namespace pipescope::calibrate
