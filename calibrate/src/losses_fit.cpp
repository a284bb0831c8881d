#include "pipescope/calibrate/losses_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include "fit_numbers.h"
#include "pipescope/calibrate/latency_bandwidth_fit.h"

namespace pipescope::calibrate {
namespace {

using detail::median;
using detail::significant;

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

}  // namespace

std::optional<LossFit> fit_sustained(const std::vector<SustainedSample>& sustained,
                                     const std::vector<GemmSample>& table,
                                     const planner::CalibrationProfile& profile, double peak_flops_per_s,
                                     const std::string& source, std::vector<std::string>& notes) {
  if (sustained.empty()) return std::nullopt;
  // The longest run is the most settled one.
  const SustainedSample& s = *std::max_element(
      sustained.begin(), sustained.end(),
      [](const SustainedSample& a, const SustainedSample& b) { return a.seconds < b.seconds; });
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  std::vector<double> table_seconds;
  for (const GemmSample& g : table) {
    if (g.dtype == "bf16" && g.m == s.m && g.n == s.n && g.k == s.k) table_seconds.push_back(g.seconds);
  }
  double reference = 0;
  std::string reference_text;
  if (!table_seconds.empty()) {
    reference = flops / median(table_seconds);
    reference_text = "the GEMM table's benchmark of that shape in the same results";
  } else {
    reference = profile.gemm_efficiency(s.m, s.n, s.k) * peak_flops_per_s;
    reference_text = "the profile's GEMM table at that shape (measured in another run)";
  }
  if (!(reference > 0)) return std::nullopt;
  double fraction = s.sustained_flops_per_s / reference;
  if (fraction > 1) {
    notes.push_back("the sustained GEMM (" + significant(s.sustained_flops_per_s / 1e12, 4) +
                    " TFLOP/s) ran faster than " + reference_text + " (" + significant(reference / 1e12, 4) +
                    " TFLOP/s): the table was measured throttled; the sustained fraction is held at 1");
    fraction = 1;
  }
  std::string conditions;
  if (s.sustained_sm_clock_mhz > 0) {
    conditions = "; SM clock " + significant(s.burst_sm_clock_mhz, 4) + " MHz from rest, " +
                 significant(s.sustained_sm_clock_mhz, 4) + " MHz settled, at " +
                 significant(s.sustained_power_w, 3) + " W" +
                 (s.power_limit_w > 0 ? " of " + significant(s.power_limit_w, 3) : "") +
                 (s.clock_event_reasons.empty() ? "" : ", clock events: " + s.clock_event_reasons);
  }
  LossFit fit;
  fit.value = {fraction, "measured: bf16 GEMM " + shape_text(s.m, s.n, s.k) + " run without a break for " +
                             significant(s.seconds, 3) + " s settled at " +
                             significant(s.sustained_flops_per_s / 1e12, 4) + " TFLOP/s, against " +
                             significant(reference / 1e12, 4) + " TFLOP/s in " + reference_text + " and " +
                             significant(s.burst_flops_per_s / 1e12, 4) + " TFLOP/s from rest" + conditions +
                             ", " + source};
  fit.summary =
      significant(fraction, 4) + " of the table: " + significant(s.sustained_flops_per_s / 1e12, 4) +
      " TFLOP/s settled after " + significant(s.seconds, 3) + " s, " + significant(reference / 1e12, 4) +
      " in the table, " + significant(s.burst_flops_per_s / 1e12, 4) + " from rest" + conditions;
  fit.quality.add(s.id.name, s.sustained_flops_per_s, fraction * reference);
  fit.quality.finish();
  return fit;
}

namespace {

std::string layout_source(const std::string& pass, size_t shapes, double low, double high,
                          const std::string& source) {
  const std::string what = pass == "dgrad" ? "input-gradient (dx = dy W)" : "weight-gradient (dW = dy^T x)";
  return "measured: geometric mean over " + std::to_string(shapes) + " bf16 " + what +
         " GEMM shapes of their time in their own operand layout over the forward layout's (" +
         significant(low, 3) + " to " + significant(high, 3) + "), " + source;
}

std::string layout_summary(double ratio, size_t shapes, double low, double high) {
  return significant(ratio, 4) + " of the forward layout's time, " + std::to_string(shapes) + " shapes, " +
         significant(low, 3) + " to " + significant(high, 3);
}

}  // namespace

LayoutFits fit_layouts(const std::vector<GemmLayoutSample>& samples, const std::string& source,
                       std::vector<std::string>& notes) {
  using GemmShape = std::tuple<int64_t, int64_t, int64_t>;
  std::map<GemmShape, std::map<std::string, std::vector<double>>> by_shape;
  std::map<GemmShape, std::string> names;
  for (const GemmLayoutSample& s : samples) {
    by_shape[{s.m, s.n, s.k}][s.pass].push_back(s.seconds);
    names.emplace(GemmShape{s.m, s.n, s.k}, s.id.name);
  }
  LayoutFits out;
  for (const std::string pass : {"dgrad", "wgrad"}) {
    std::vector<std::pair<GemmShape, double>> ratios;
    size_t unpaired = 0;
    for (const auto& [shape, passes] : by_shape) {
      const auto own = passes.find(pass);
      if (own == passes.end()) continue;
      const auto forward = passes.find("forward");
      if (forward == passes.end()) {
        ++unpaired;
        continue;
      }
      ratios.emplace_back(shape, median(own->second) / median(forward->second));
    }
    if (unpaired > 0) {
      notes.push_back(
          std::to_string(unpaired) + " " + pass +
          " GEMM shapes have no forward-layout measurement beside them; left out of the layout ratio");
    }
    if (ratios.empty()) continue;
    double log_sum = 0, low = ratios.front().second, high = low;
    for (const auto& [shape, r] : ratios) {
      log_sum += std::log(r);
      low = std::min(low, r);
      high = std::max(high, r);
    }
    const double ratio = std::exp(log_sum / static_cast<double>(ratios.size()));
    LossFit fit;
    fit.value = {ratio, layout_source(pass, ratios.size(), low, high, source)};
    fit.summary = layout_summary(ratio, ratios.size(), low, high);
    for (const auto& [shape, r] : ratios) fit.quality.add(names[shape], r, ratio);
    fit.quality.finish();
    (pass == "dgrad" ? out.dgrad : out.wgrad) = std::move(fit);
  }
  return out;
}

std::optional<LossFit> fit_interference(const std::vector<InterferenceSample>& samples,
                                        const std::string& work, const std::string& source) {
  std::map<int, std::vector<double>> by_sms;
  for (const InterferenceSample& s : samples) {
    if (s.work == work && s.alone_s > 0) by_sms[s.sms].push_back(s.slowdown());
  }
  if (by_sms.empty()) return std::nullopt;
  int sms = by_sms.begin()->first;
  for (const auto& [count, values] : by_sms) {
    if (std::abs(count - kInterferenceSms) < std::abs(sms - kInterferenceSms)) sms = count;
  }
  const double slowdown = std::max(0.0, median(by_sms[sms]));
  std::string by_count;
  for (const auto& [count, values] : by_sms) {
    by_count +=
        (by_count.empty() ? "" : ", ") + std::to_string(count) + " SMs " + significant(median(values), 3);
  }
  const std::string what = work == "gemm" ? "bf16 GEMMs" : "memory-bound copies";
  LossFit fit;
  fit.value = {slowdown, "measured: median slowdown of " + what + " beside a copy kernel holding " +
                             std::to_string(sms) + " SMs (" + std::to_string(by_sms[sms].size()) +
                             " measurements over shapes and memory traffic; by SMs held: " + by_count +
                             "), " + source};
  fit.summary = "+" + significant(slowdown * 100, 3) + " % beside " + std::to_string(sms) + " held SMs (" +
                by_count + ")";
  for (const InterferenceSample& s : samples) {
    if (s.work == work && s.sms == sms) fit.quality.add(s.id.name, s.beside_s, s.alone_s * (1 + slowdown));
  }
  fit.quality.finish();
  return fit;
}

std::optional<std::string> launch_gaps_summary(const std::vector<LaunchGapSample>& samples) {
  if (samples.empty()) return std::nullopt;
  std::vector<LaunchGapSample> sorted = samples;
  std::sort(sorted.begin(), sorted.end(),
            [](const LaunchGapSample& a, const LaunchGapSample& b) { return a.bytes < b.bytes; });
  std::string text;
  for (const LaunchGapSample& s : sorted) {
    const std::string kernel =
        s.bytes == 0 ? std::string("empty kernel")
                     : "copy of " + significant(static_cast<double>(s.bytes) / (1 << 20), 3) + " MiB";
    text += (text.empty() ? "" : "; ") + kernel + ": " + significant(s.stream_s * 1e6, 3) +
            " us a kernel launched one at a time, " + significant(s.graph_s * 1e6, 3) +
            " us from a graph (the GPU idles " + significant(s.gap_s() * 1e6, 3) + " us a kernel), host " +
            significant(s.host_s * 1e6, 3) + " us a launch";
  }
  return text;
}

std::optional<LossFit> fit_launch_gap(const std::vector<LaunchGapSample>& samples,
                                      const std::string& source) {
  const auto empty = std::find_if(samples.begin(), samples.end(),
                                  [](const LaunchGapSample& s) { return s.bytes == 0 && s.graph_s > 0; });
  if (empty == samples.end()) return std::nullopt;
  LossFit fit;
  fit.value = {empty->graph_s,
               "measured: an empty kernel replayed 1,000 at a time from a CUDA graph took " +
                   significant(empty->graph_s * 1e6, 3) +
                   " us a kernel (launched one at a time: " + significant(empty->stream_s * 1e6, 3) +
                   " us, the host's " + significant(empty->host_s * 1e6, 3) + " us a launch), " + source};
  fit.summary = *launch_gaps_summary(samples);
  for (const LaunchGapSample& s : samples) fit.quality.add(s.id.name, s.stream_s, s.graph_s + s.gap_s());
  fit.quality.finish();
  return fit;
}

namespace {

struct EagerOpLine {
  std::string op;
  bool unvectorized = false;
  LineFit line;
};

std::vector<EagerOpLine> eager_op_lines(const std::vector<EagerKernelSample>& samples,
                                        std::vector<std::string>& notes) {
  std::map<std::string, std::vector<TimedSize>> by_op;
  std::map<std::string, bool> unvectorized;
  for (const EagerKernelSample& s : samples) {
    by_op[s.op].push_back({s.bytes, s.seconds, s.id.name});
    unvectorized[s.op] = s.unvectorized();
  }
  std::vector<EagerOpLine> lines;
  for (const auto& [op, points] : by_op) {
    auto line = fit_line(points, "eager/" + op);
    if (!line.ok()) {
      notes.push_back("eager/" + op + " left out of PyTorch's kernels: " + line.error().message);
      continue;
    }
    lines.push_back({op, unvectorized[op], *line});
  }
  return lines;
}

std::string bandwidth_text(double bytes_per_s) { return significant(bytes_per_s / 1e9, 4) + " GB/s"; }

}  // namespace

EagerFits fit_eager_kernels(const std::vector<EagerKernelSample>& samples, double launch_gap_s,
                            double memory_bound_bytes_per_s, const std::string& source,
                            std::vector<std::string>& notes) {
  const std::vector<EagerOpLine> lines = eager_op_lines(samples, notes);
  if (lines.empty()) return {};
  std::vector<double> fixed, unvectorized_bandwidth;
  std::string per_op;
  for (const EagerOpLine& l : lines) {
    fixed.push_back(l.line.latency_s);
    const double bandwidth = 1 / l.line.seconds_per_unit;
    if (l.unvectorized) unvectorized_bandwidth.push_back(bandwidth);
    per_op += (per_op.empty() ? "" : ", ") + l.op + " " + significant(l.line.latency_s * 1e6, 3) + " us + " +
              bandwidth_text(bandwidth);
  }
  const double intercept = median(fixed);
  double kernel_fixed = intercept - launch_gap_s;
  if (kernel_fixed < 0) {
    notes.push_back("PyTorch's kernels took less fixed time (" + significant(intercept * 1e6, 3) +
                    " us) than the launch gap (" + significant(launch_gap_s * 1e6, 3) +
                    " us); no fixed time is priced beyond it");
    kernel_fixed = 0;
  }
  double fraction = 0;
  if (!unvectorized_bandwidth.empty() && memory_bound_bytes_per_s > 0) {
    fraction = median(unvectorized_bandwidth) / memory_bound_bytes_per_s;
    if (fraction > 1) {
      notes.push_back("PyTorch's unvectorized kernels (" + bandwidth_text(median(unvectorized_bandwidth)) +
                      ") ran faster than the memory-bound bandwidth (" +
                      bandwidth_text(memory_bound_bytes_per_s) + "); the fraction is held at 1");
      fraction = 1;
    }
  }
  // The pricing's own view of every measurement: the ops' fixed time and the class bandwidth.
  FitQuality quality;
  for (const EagerKernelSample& s : samples) {
    const double bandwidth =
        s.unvectorized() && fraction > 0 ? fraction * memory_bound_bytes_per_s : memory_bound_bytes_per_s;
    if (bandwidth > 0) quality.add(s.id.name, s.seconds, intercept + s.bytes / bandwidth);
  }
  quality.finish();
  const std::string measured =
      "measured: PyTorch's own memory-bound kernels replayed from a CUDA graph, "
      "a line per op (fixed time + bytes / bandwidth): " +
      per_op;
  EagerFits out;
  out.kernel_fixed = LossFit{
      {kernel_fixed, measured + "; the median op's fixed time " + significant(intercept * 1e6, 3) +
                         " us less the launch gap " + significant(launch_gap_s * 1e6, 3) + " us, " + source},
      significant(kernel_fixed * 1e6, 3) + " us a kernel beyond its bytes and the launch gap (" + per_op +
          ")",
      quality};
  if (fraction > 0) {
    out.unvectorized =
        LossFit{{fraction, measured + "; the median unvectorized op (casts, layout copies) at " +
                               bandwidth_text(median(unvectorized_bandwidth)) + " over the memory-bound " +
                               bandwidth_text(memory_bound_bytes_per_s) + ", " + source},
                significant(fraction, 4) +
                    " of the memory-bound bandwidth: " + bandwidth_text(median(unvectorized_bandwidth)) +
                    " against " + bandwidth_text(memory_bound_bytes_per_s),
                quality};
  }
  return out;
}

UnfusedAttentionFits fit_unfused_attention(const std::vector<UnfusedAttentionSample>& samples,
                                           const planner::CalibrationProfile& profile,
                                           double peak_flops_per_s, double memory_bound_bytes_per_s,
                                           const std::string& source, std::vector<std::string>& notes) {
  UnfusedAttentionFits out;
  if (samples.empty() || memory_bound_bytes_per_s <= 0 || profile.gemm.empty()) return out;
  auto gemm_s = [&](const UnfusedAttentionSample& u) {
    const auto seq = static_cast<double>(u.seq);
    return profile.unfused_attention_gemm_s(peak_flops_per_s, static_cast<double>(u.matrices), seq, seq,
                                            static_cast<double>(u.head_dim), u.backward);
  };
  auto traffic_bytes = [](const UnfusedAttentionSample& u) {
    const auto seq = static_cast<double>(u.seq);
    return planner::UnfusedScoreTraffic::matrices(u.backward, u.dropout) * static_cast<double>(u.matrices) *
           seq * seq * 2;  // bf16 scores
  };
  for (const bool backward : {false, true}) {
    std::vector<const UnfusedAttentionSample*> timed;
    std::vector<double> fractions;
    for (const UnfusedAttentionSample& u : samples) {
      if (u.backward != backward) continue;
      const double traffic_s = u.seconds - gemm_s(u);
      if (traffic_s <= 0) {
        notes.push_back("unfused attention '" + u.id.name + "' took " + significant(u.seconds * 1e3, 3) +
                        " ms, no more than its batched GEMMs at the GEMM table (" +
                        significant(gemm_s(u) * 1e3, 3) + " ms); left out");
        continue;
      }
      timed.push_back(&u);
      fractions.push_back(traffic_bytes(u) / traffic_s / memory_bound_bytes_per_s);
    }
    if (fractions.empty()) continue;
    const double fraction = median(fractions);
    FitQuality quality;
    for (const UnfusedAttentionSample* u : timed) {
      quality.add(u->id.name, u->seconds,
                  gemm_s(*u) + traffic_bytes(*u) / (fraction * memory_bound_bytes_per_s));
    }
    quality.finish();
    const auto [low, high] = std::minmax_element(fractions.begin(), fractions.end());
    std::string spread = std::to_string(fractions.size()) + (fractions.size() == 1 ? " timing" : " timings");
    if (fractions.size() > 1) spread += ", " + significant(*low, 3) + " to " + significant(*high, 3);
    std::string measured =
        "measured: Megatron-LM's unfused attention (batched GEMMs, softmax, dropout) timed alone, its ";
    measured += backward ? "backward" : "forward";
    measured +=
        " less its batched GEMMs at the GEMM table (one GEMM of all their rows): its score traffic at the "
        "median (";
    measured += spread;
    measured += ") of the memory-bound bandwidth, ";
    measured += source;
    std::string summary = significant(fraction, 4);
    summary += " of the memory-bound bandwidth (";
    summary += spread;
    summary += ")";
    std::optional<LossFit>& slot = backward ? out.backward : out.forward;
    slot = LossFit{{fraction, std::move(measured)}, std::move(summary), quality};
  }
  return out;
}

}  // namespace pipescope::calibrate
