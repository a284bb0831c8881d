#include "pipescope/calibrate/attention_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "fit_numbers.h"

namespace pipescope::calibrate {
namespace {

using detail::median;

using Cell = std::pair<int64_t, int64_t>;  // (seq, head_dim)

Expected<std::vector<planner::AttentionPoint>> fit_pass(const std::vector<const AttentionSample*>& samples,
                                                        double peak, const std::string& pass,
                                                        const std::string& source,
                                                        std::vector<std::string>& notes) {
  std::map<Cell, std::vector<double>> cells;
  for (const AttentionSample* s : samples) {
    const double efficiency = s->flops / (s->seconds * peak);
    if (efficiency > 1.0) {
      return Error{"cannot fit attention efficiency: '" + s->id.name +
                   "' ran faster than the datasheet peak; " +
                   "the results are not from this GPU (check --gpu) or its flops counter is wrong"};
    }
    cells[{s->seq, s->head_dim}].push_back(efficiency);
  }
  // The largest full grid: keep the head dims measured at every sequence length of the most
  // complete one.
  std::map<int64_t, std::set<int64_t>> seqs_by_dim;
  for (const auto& [cell, _] : cells) seqs_by_dim[cell.second].insert(cell.first);
  std::set<int64_t> seqs;
  for (const auto& [dim, s] : seqs_by_dim) {
    if (s.size() > seqs.size()) seqs = s;
  }
  if (seqs.size() < 2) {
    return Error{"cannot fit " + pass + " attention efficiency from " + std::to_string(seqs.size()) +
                 " sequence length" + (seqs.size() == 1 ? "" : "s") + ": at least two are needed"};
  }
  std::vector<planner::AttentionPoint> points;
  for (const auto& [dim, s] : seqs_by_dim) {
    if (!std::includes(s.begin(), s.end(), seqs.begin(), seqs.end())) {
      notes.push_back(pass + " attention: head_dim " + std::to_string(dim) +
                      " was not measured at every sequence length; left out of the grid");
      continue;
    }
    for (int64_t seq : seqs) {
      const std::vector<double>& values = cells.at({seq, dim});
      char text[64];
      std::snprintf(text, sizeof(text), "%.4f", median(values));
      points.push_back({seq, dim, median(values),
                        "measured: " + pass + " seq " + std::to_string(seq) + " head_dim " +
                            std::to_string(dim) + ", median of " + std::to_string(values.size()) +
                            " run(s) = " + text + " of peak, " + source});
    }
  }
  return points;
}

}  // namespace

Expected<AttentionFit> fit_attention(const std::vector<AttentionSample>& samples, double peak_flops_per_s,
                                     const std::string& source) {
  AttentionFit fit;
  std::set<std::string> kernels;
  for (const AttentionSample& s : samples) {
    if (!(s.seconds > 0) || !std::isfinite(s.seconds) || !(s.flops > 0)) {
      return Error{"cannot fit attention efficiency: '" + s.id.name + "' has a non-positive time or flops"};
    }
    if (!s.kernel.empty()) kernels.insert(s.kernel);
  }
  for (const std::string& k : kernels) fit.kernels += (fit.kernels.empty() ? "" : ", ") + k;
  const bool any_causal =
      std::any_of(samples.begin(), samples.end(), [](const AttentionSample& s) { return s.causal; });
  for (bool backward : {false, true}) {
    std::vector<const AttentionSample*> chosen;
    for (const AttentionSample& s : samples) {
      if (s.backward == backward && s.causal == any_causal) chosen.push_back(&s);
    }
    const std::string pass = backward ? "backward" : "forward";
    if (chosen.empty()) {
      fit.notes.push_back("no " + pass + " attention was measured: the base profile's " + pass +
                          " pass is kept");
      continue;
    }
    auto points = fit_pass(chosen, peak_flops_per_s, pass,
                           source + (fit.kernels.empty() ? "" : ", kernel " + fit.kernels), fit.notes);
    if (!points.ok()) return points.error();
    (backward ? fit.backward : fit.forward) = std::move(*points);
  }
  planner::CalibrationProfile table;
  table.attention_forward = fit.forward;
  table.attention_backward = fit.backward;
  for (const AttentionSample& s : samples) {
    if (s.causal != any_causal || (s.backward ? fit.backward : fit.forward).empty()) continue;
    const double measured = s.flops / (s.seconds * peak_flops_per_s);
    const double predicted = table.attention_efficiency(
        s.seq, s.head_dim, s.backward ? planner::AttentionPass::kBackward : planner::AttentionPass::kForward);
    fit.quality.add(s.id.name, measured, predicted);
  }
  fit.quality.finish();
  if (!any_causal)
    fit.notes.push_back("attention was measured without a causal mask; the planner prices causal attention");
  return fit;
}

}  // namespace pipescope::calibrate
