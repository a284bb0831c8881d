// HTA's figures per rank as the text and HTML reports show them: the same columns and the same
// choice of ranks in both (all of them up to a limit; beyond it, the ranks that idled most).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "pipescope/analysis/run_report.h"
#include "text_cells.h"

namespace pipescope::report {

struct HtaTable {
  std::vector<std::string> header = {"rank",    "kernel ms",   "idle",
                                     "compute", "non-compute", "comp-comm overlap"};
  std::vector<std::vector<std::string>> rows;
  size_t ranks_with_figures = 0;
  std::string kernel_types;  // "COMPUTATION 47.2%, COMMUNICATION 21.5%, ..."
};

inline HtaTable hta_table(const analysis::RunReport& r, size_t most_rows) {
  HtaTable t;
  std::vector<const analysis::RankReport*> ranks;
  for (const analysis::RankReport& k : r.ranks)
    if (k.hta && k.hta->kernel_time_ns > 0) ranks.push_back(&k);
  t.ranks_with_figures = ranks.size();
  const auto idle_share = [](const analysis::RankReport* k) {
    return static_cast<double>(k->hta->idle_time_ns) / static_cast<double>(k->hta->kernel_time_ns);
  };
  if (ranks.size() > most_rows) {
    std::stable_sort(ranks.begin(), ranks.end(),
                     [&](auto* a, auto* b) { return idle_share(a) > idle_share(b); });
    ranks.resize(most_rows);
  }
  const auto pctg = [](double fraction) { return fixed(100 * fraction, 2) + "%"; };
  for (const analysis::RankReport* k : ranks) {
    const analysis::HtaFigures& h = *k->hta;
    const auto share = [&](int64_t ns) {
      return static_cast<double>(ns) / static_cast<double>(h.kernel_time_ns);
    };
    t.rows.push_back({std::to_string(k->rank), fixed(static_cast<double>(h.kernel_time_ns) / 1e6, 1),
                      pctg(share(h.idle_time_ns)), pctg(share(h.compute_time_ns)),
                      pctg(share(h.non_compute_time_ns)),
                      h.comp_comm_overlap ? pctg(*h.comp_comm_overlap) : "-"});
  }
  for (const analysis::HtaKernelTypeShare& k : r.hta_kernel_types)
    t.kernel_types +=
        (t.kernel_types.empty() ? "" : ", ") + k.kernel_type + " " + fixed(k.percentage, 1) + "%";
  return t;
}

}  // namespace pipescope::report
