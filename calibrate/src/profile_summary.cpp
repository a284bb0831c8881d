#include "pipescope/calibrate/profile_summary.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pipescope::calibrate {
namespace {

using planner::CalibrationProfile;
using planner::CollectiveKind;
using planner::LinkTier;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

void count_sources(const CalibrationProfile& p, ProfileSummary& s) {
  auto add = [&](const std::string& source) {
    (planner::is_measured_source(source) ? s.measured_sources : s.other_sources) += 1;
  };
  for (const auto& g : p.gemm) add(g.source);
  for (const auto& a : p.attention_forward) add(a.source);
  for (const auto& a : p.attention_backward) add(a.source);
  add(p.hbm_bandwidth_fraction.source);
  for (LinkTier tier : planner::kLinkTiers) {
    for (CollectiveKind kind : planner::kCollectiveKinds) {
      const auto& measured = p.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      if (measured.empty()) {
        add(p.collective(kind, tier).source);
      } else {
        for (const auto& e : measured) add(e.source);
      }
    }
  }
  for (const auto* v :
       {&p.overheads.cuda_context_bytes, &p.overheads.allocator_reserve_fraction,
        &p.overheads.nccl_buffer_bytes_per_communicator, &p.overheads.memory_headroom_fraction})
    add(v->source);
  for (const planner::TrainingLossField& field : planner::kTrainingLossFields) {
    if (const std::string& source = (p.losses.*field.member).source; !source.empty()) add(source);
  }
}

}  // namespace

ProfileSummary summarize_profile(const CalibrationProfile& p, const planner::Gpu& gpu) {
  ProfileSummary s;
  s.gpu = p.gpu;
  s.device_name = gpu.device_name;
  s.description = p.description;
  s.provenance = p.provenance;
  count_sources(p, s);
  const double peak = gpu.peak_dense_bf16_flops_per_s;
  // Square GEMMs and a 4-micro-batch MLP-like shape.
  for (auto [m, n, k] : {std::array<int64_t, 3>{1024, 1024, 1024},
                         {4096, 4096, 4096},
                         {8192, 8192, 8192},
                         {16384, 4096, 4096}}) {
    const double e = p.gemm_efficiency(m, n, k);
    s.achieved.push_back({"gemm_bf16", std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                          "flops_per_s", e * peak, peak, e, 0});
  }
  s.waves = p.gemm_waves;
  for (auto pass : {planner::AttentionPass::kForward, planner::AttentionPass::kBackward}) {
    for (int64_t seq : {2048, 8192}) {
      const double e = p.attention_efficiency(seq, 128, pass);
      s.achieved.push_back(
          {pass == planner::AttentionPass::kForward ? "attention_forward" : "attention_backward",
           "seq " + std::to_string(seq) + " hd 128", "flops_per_s", e * peak, peak, e, 0});
    }
  }
  s.achieved.push_back({"memory_bound", "HBM", "bytes_per_s", p.memory_bound_bytes_per_s(gpu),
                        gpu.hbm_bytes_per_s, p.hbm_bandwidth_fraction.value, 0});
  for (planner::CopyKind kind : planner::kCopyKinds) {
    const planner::CopyCost& c = p.copy(kind);
    if (c.bytes_per_s > 0) {
      s.achieved.push_back({"copy", std::string(planner::copy_kind_name(kind)), "bytes_per_s", c.bytes_per_s,
                            0, 0, c.latency_s});
    }
  }
  for (LinkTier tier : planner::kLinkTiers) {
    for (CollectiveKind kind : planner::kCollectiveKinds) {
      const std::string tier_name(planner::link_tier_name(tier)),
          kind_name(planner::collective_kind_name(kind));
      const auto& measured = p.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      for (const auto& e : measured) {
        s.collectives.push_back({tier_name, kind_name, e.ranks, true, e.segments.front().latency_s,
                                 e.segments.back().bus_bandwidth_bytes_per_s, 0});
      }
      if (!measured.empty()) continue;
      const planner::CollectiveCost& c = p.collective(kind, tier);
      s.collectives.push_back({tier_name, kind_name, 0, false, c.latency_s, c.bus_bandwidth_bytes_per_s,
                               c.bus_bandwidth_fraction, c.latency_ranks, c.latency_nodes});
    }
  }
  s.overheads = p.overheads;
  s.losses = p.losses;
  return s;
}

void write_profile_summary(std::ostream& out, const ProfileSummary& s) {
  out << "calibration profile for " << s.gpu << " (" << s.device_name << ")\n";
  if (!s.description.empty()) out << s.description << '\n';
  const planner::Provenance& v = s.provenance;
  if (!v.empty()) {
    out << "measured on " << (v.gpu_device_name.empty() ? "?" : v.gpu_device_name);
    if (!v.driver_version.empty()) out << ", driver " << v.driver_version;
    if (!v.cuda_runtime_version.empty()) out << ", CUDA " << v.cuda_runtime_version;
    if (!v.nccl_version.empty()) out << ", NCCL " << v.nccl_version;
    if (!v.date.empty()) out << ", " << v.date;
    if (!v.host.empty()) out << ", host " << v.host;
    out << '\n';
    if (!v.command.empty()) out << "command: " << v.command << '\n';
  }
  out << "sources: " << s.measured_sources << " entries measured or fitted, " << s.other_sources
      << " from datasheets, publications or estimates (each with its source in the file)\n\n";
  auto row = [&](const std::string& what, const std::string& achieved, const std::string& peak,
                 const std::string& fraction) {
    out << "  " << pad(what, 36) << pad(achieved, 16) << pad(peak, 16) << fraction << '\n';
  };
  row("category", "achieved", "peak", "fraction");
  for (const AchievedRow& r : s.achieved) {
    if (r.category == "copy") {
      row("copy " + r.what, format("%.1f GB/s", r.achieved / 1e9), "",
          format("latency %.1f us", r.latency_s * 1e6));
      continue;
    }
    const bool flops = r.unit == "flops_per_s";
    const char* pattern = flops ? "%.0f TFLOP/s" : "%.0f GB/s";
    const double scale = flops ? 1e12 : 1e9;
    const std::string what = r.category == "gemm_bf16"            ? "GEMM bf16 " + r.what
                             : r.category == "attention_forward"  ? "attention forward " + r.what
                             : r.category == "attention_backward" ? "attention backward " + r.what
                                                                  : "memory-bound kernels (HBM)";
    row(what, format(pattern, r.achieved / scale), format(pattern, r.peak / scale),
        format("%.3f", r.fraction));
    if (r.category == "gemm_bf16" && r.what == "16384x4096x4096" && s.waves.enabled()) {
      out << "  (wave term: " << s.waves.tile_m << "x" << s.waves.tile_n << " tiles on " << s.waves.sm_count
          << " SMs)\n";
    }
  }
  out << "\n  collectives: bus bandwidth of the largest messages (nccl-tests' busbw), latency\n";
  for (const CollectiveRow& c : s.collectives) {
    const std::string name =
        c.tier + " " + c.kind + (c.measured ? " " + std::to_string(c.ranks) + " ranks" : "");
    row(name,
        c.bus_bandwidth_fraction > 0 ? format("%.2f of link", c.bus_bandwidth_fraction)
                                     : format("%.1f GB/s", c.bus_bandwidth_bytes_per_s / 1e9),
        c.measured ? "measured" : "",
        format("latency %.1f us", c.latency_s * 1e6) +
            (c.latency_ranks > 0
                 ? " on " + std::to_string(c.latency_ranks) + " ranks over " +
                       std::to_string(c.latency_nodes) + " nodes, grown with NCCL's tuning model"
                 : ""));
  }
  const planner::MemoryOverheads& o = s.overheads;
  out << "\n  memory overheads: CUDA context " << format("%.2f GiB", o.cuda_context_bytes.value / (1 << 30))
      << ", NCCL " << format("%.2f GiB", o.nccl_buffer_bytes_per_communicator.value / (1 << 30))
      << " per communicator, allocator reserve " << format("%.1f%%", o.allocator_reserve_fraction.value * 100)
      << " of allocated, headroom " << format("%.1f%%", o.memory_headroom_fraction.value * 100)
      << " of the GPU\n";
  const planner::TrainingLosses& l = s.losses;
  // A loss carried over from other GPUs says so here; its source says from which and how.
  auto measured_or = [](const planner::SourcedValue& value, const std::string& text) {
    if (value.source.empty()) return std::string("not measured (no loss priced)");
    return planner::is_measured_source(value.source) ? text
                                                     : text + " (not measured on this GPU: see its source)";
  };
  out << "\n  training losses (what the planner takes off the table's figures):\n"
      << "    sustained clocks: "
      << measured_or(l.sustained_gemm_fraction,
                     format("GEMMs and attention at %.3f of the table", l.sustained_gemm_fraction.value))
      << "\n    backward layouts: "
      << measured_or(l.dgrad_time_ratio, format("input gradient %.3f", l.dgrad_time_ratio.value) +
                                             format(", weight gradient %.3f", l.wgrad_ratio()) +
                                             " x the forward layout's time")
      << "\n    beside communication: "
      << measured_or(l.overlap_gemm_slowdown,
                     format("GEMMs and attention +%.1f%%", l.overlap_gemm_slowdown.value * 100) +
                         format(", memory-bound +%.1f%%", l.overlap_memory_bound_slowdown.value * 100) +
                         " while a collective overlaps them")
      << "\n    launch gaps: "
      << measured_or(l.launch_gap_s,
                     format("%.2f us of GPU time a kernel launched", l.launch_gap_s.value * 1e6) +
                         " (priced for frameworks whose kernels it lists: pytorch-eager)")
      << "\n    PyTorch's own kernels: "
      << measured_or(l.eager_kernel_fixed_s,
                     format("%.2f us a kernel beyond its bytes", l.eager_kernel_fixed_s.value * 1e6) +
                         ", unvectorized ones (casts, layout copies) at " +
                         format("%.3f", l.unvectorized_fraction()) + " of the memory-bound bandwidth" +
                         " (priced under pytorch-eager)")
      << "\n    unfused attention: "
      << measured_or(l.unfused_scores_forward_fraction,
                     "s x s scores at " + format("%.3f", l.unfused_scores_fraction(false)) +
                         " (forward) and " + format("%.3f", l.unfused_scores_fraction(true)) +
                         " (backward) of the memory-bound bandwidth (priced with --no-flash-attention)")
      << '\n';
}

std::string profile_summary_json(const ProfileSummary& s) {
  using nlohmann::ordered_json;
  ordered_json achieved = ordered_json::array();
  for (const AchievedRow& r : s.achieved) {
    ordered_json row = {
        {"category", r.category}, {"what", r.what}, {"unit", r.unit}, {"achieved", r.achieved}};
    if (r.peak > 0) {
      row["peak"] = r.peak;
      row["fraction"] = r.fraction;
    }
    if (r.category == "copy") row["latency_s"] = r.latency_s;
    achieved.push_back(std::move(row));
  }
  ordered_json collectives = ordered_json::array();
  for (const CollectiveRow& c : s.collectives) {
    ordered_json row = {{"tier", c.tier}, {"kind", c.kind}, {"measured", c.measured}};
    if (c.measured) row["ranks"] = c.ranks;
    row["latency_s"] = c.latency_s;
    if (c.latency_ranks > 0) {
      row["latency_ranks"] = c.latency_ranks;
      row["latency_nodes"] = c.latency_nodes;
    }
    if (c.bus_bandwidth_fraction > 0) {
      row["bus_bandwidth_fraction"] = c.bus_bandwidth_fraction;
    } else {
      row["bus_bandwidth_bytes_per_s"] = c.bus_bandwidth_bytes_per_s;
    }
    collectives.push_back(std::move(row));
  }
  const planner::Provenance& v = s.provenance;
  ordered_json provenance = {{"gpu_device_name", v.gpu_device_name},
                             {"driver_version", v.driver_version},
                             {"cuda_runtime_version", v.cuda_runtime_version},
                             {"nccl_version", v.nccl_version},
                             {"torch_version", v.torch_version},
                             {"date", v.date},
                             {"host", v.host},
                             {"command", v.command}};
  const planner::MemoryOverheads& o = s.overheads;
  ordered_json doc = {
      {"schema_version", kCalibrateJsonSchemaVersion},
      {"gpu", s.gpu},
      {"device_name", s.device_name},
      {"description", s.description},
      {"provenance", v.empty() ? ordered_json(nullptr) : provenance},
      {"sources", {{"measured_or_fitted", s.measured_sources}, {"published_or_estimated", s.other_sources}}},
      {"achieved", achieved},
      {"collectives", collectives},
      {"memory_overheads",
       {{"cuda_context_bytes", o.cuda_context_bytes.value},
        {"nccl_buffer_bytes_per_communicator", o.nccl_buffer_bytes_per_communicator.value},
        {"allocator_reserve_fraction", o.allocator_reserve_fraction.value},
        {"memory_headroom_fraction", o.memory_headroom_fraction.value}}}};
  const planner::TrainingLosses& l = s.losses;
  auto loss_value = [](const planner::SourcedValue& value) {
    return value.source.empty() ? ordered_json(nullptr) : ordered_json(value.value);
  };
  doc["losses"] = ordered_json::object();
  for (const planner::TrainingLossField& field : planner::kTrainingLossFields)
    doc["losses"][std::string(field.name)] = loss_value(l.*field.member);
  if (s.waves.enabled()) {
    doc["gemm_waves"] = {
        {"sm_count", s.waves.sm_count}, {"tile_m", s.waves.tile_m}, {"tile_n", s.waves.tile_n}};
  }
  return doc.dump(2) + "\n";
}

}  // namespace pipescope::calibrate
