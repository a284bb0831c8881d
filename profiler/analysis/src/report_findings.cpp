// The headline lines of the report, most important first: the layout, a hang and the rank it
// comes from, step time, the pipeline bubble, the memory imbalance, stragglers, where GPU time went.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "report_context.h"

namespace pipescope::analysis {
namespace {

std::string ms(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f ms", static_cast<double>(ns) / 1e6);
  return text;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f%%", fraction * 100);
  return text;
}

// "4,6 (no trace)": ranks, marked where they left no trace; "?" where no trace tells which.
std::string ranks_text(const std::vector<int32_t>& ranks, const std::vector<int32_t>& untraced = {}) {
  std::string text;
  for (int32_t r : ranks) {
    text += text.empty() ? "" : ",";
    text += r >= 0 ? std::to_string(r) : "?";
    if (std::find(untraced.begin(), untraced.end(), r) != untraced.end()) text += " (no trace)";
  }
  return text;
}

// Where a root rank is, for the headline.
std::string whereabouts(const HangRoot& root, int64_t end_ns) {
  if (root.where == "no trace") return "it left no trace";
  const std::string since =
      root.since_ns >= 0 ? " for " + ms(std::max<int64_t>(0, end_ns - root.since_ns)) : "";
  if (root.where == "in call") return "it is inside " + root.call + since;
  if (root.where == "exited") return "it exited with status " + std::to_string(root.code);
  if (root.where == "signal") return "it was ended by signal " + std::to_string(root.code);
  return "it is in its own code" + since +
         (root.call.empty() ? "" : ", since its last NCCL call (" + root.call + ") returned");
}

// The headline of a hang: the ranks at the root of the waiting, what they never entered, where
// they are, and how many ranks waited on them.
std::string root_cause(const HangReport& hang, int64_t end_ns) {
  if (hang.root_ranks.empty()) return "";
  const int32_t root = hang.root_ranks.front();
  std::string what;
  int64_t waited = 0;
  const CommHang* direct = nullptr;  // where it alone is missing, if anywhere: the plainest evidence
  for (const CommHang& h : hang.communicators) {
    waited = std::max(waited, h.waited_ns);
    if (std::find(h.missing.begin(), h.missing.end(), root) != h.missing.end() &&
        (direct == nullptr || h.missing.size() < direct->missing.size()))
      direct = &h;
  }
  if (direct != nullptr) {
    what = direct->creation
               ? "never entered " + direct->next_op + " of a " + direct->role + " communicator"
               : "never entered " + (direct->next_op.empty() ? std::string("collective") : direct->next_op) +
                     " #" + std::to_string(direct->last_completed_by_all) + " of a " + direct->role +
                     " communicator";
  }
  for (const P2pHang& h : hang.p2p) {  // a p2p wait on it is the more direct evidence
    waited = std::max(waited, h.waited_ns);
    if (h.peer == root) what = "never met rank " + std::to_string(h.rank) + "'s " + h.op;
  }
  std::string status;
  if (!hang.roots.empty()) {
    status = " (" + whereabouts(hang.roots.front(), end_ns) + ")";
  } else if (std::find(hang.no_trace.begin(), hang.no_trace.end(), root) != hang.no_trace.end()) {
    status = " (it left no trace)";
  }
  if (std::find(hang.ended_early.begin(), hang.ended_early.end(), root) != hang.ended_early.end())
    status += " (its trace ends early)";
  const bool one = hang.root_ranks.size() == 1;
  return "hang: " + std::string(one ? "rank " : "ranks ") + ranks_text(hang.root_ranks) +
         (one ? " holds" : " hold") + " up the run: " + (one ? "it" : "rank " + std::to_string(root)) + " " +
         what + status + "; " + std::to_string(hang.blocked) + " rank(s) waited on " + (one ? "it" : "them") +
         ", directly or through ranks blocked on " + (one ? "it" : "them") + ", up to " + ms(waited);
}

// Ranks whose kernels ran on the same GPU (the same UUID): the GPU time-slices between their
// processes, so a kernel's measured time takes in the others' slices.
void warn_of_shared_gpus(RunReport& report) {
  std::map<std::string, std::vector<int32_t>> ranks_by_gpu;
  for (const RankReport& r : report.ranks)
    for (const std::string& uuid : r.gpu_uuids) ranks_by_gpu[uuid].push_back(r.rank);
  for (const auto& [uuid, ranks] : ranks_by_gpu) {
    if (ranks.size() < 2) continue;
    report.warnings.push_back("ranks " + ranks_text(ranks) + " ran their kernels on one GPU (" + uuid +
                              "): its time is shared between their processes, so each kernel's time "
                              "includes the others', and the GPU times per rank and per stage (and "
                              "against a plan) are not one rank's alone; memory is");
  }
}

// A stage whose forward and backward NVTX ranges take far less of a step than its GPU computes
// (kernels other than NCCL's, which also wait for peers, and copies):
// the host queued the work and moved on, so the ranges time the host, not the GPU (PyTorch
// without a synchronization inside them).
void warn_of_host_side_stage_times(RunReport& report) {
  for (const StageReport& s : report.stages) {
    if (s.source != "nvtx" || !s.microbatch_ns || !s.microbatches_per_step) continue;
    int64_t busy_ns = 0;
    uint64_t steps = 0;
    for (const RankReport& r : report.ranks) {
      if (r.stage != s.stage || !r.gpu.captured || r.steps == 0) continue;
      // Under kernel sampling the GPU's time covers the recorded steps only: scaled to all of them.
      busy_ns += static_cast<int64_t>(static_cast<double>(r.gpu.compute_ns + r.gpu.copy_only_ns) /
                                      std::max(r.gpu.recorded_fraction, 1e-9));
      steps += r.steps;
    }
    if (steps == 0) continue;
    const double busy_per_step = static_cast<double>(busy_ns) / static_cast<double>(steps);
    const double ranges_per_step = static_cast<double>(*s.microbatch_ns) * *s.microbatches_per_step;
    if (ranges_per_step >= 0.75 * busy_per_step) continue;
    report.warnings.push_back("stage " + std::to_string(s.stage) + ": its forward and backward ranges take " +
                              ms(static_cast<int64_t>(ranges_per_step)) + " a step where its GPU computes " +
                              ms(static_cast<int64_t>(busy_per_step)) +
                              ": the host queued the work ahead of the GPU, so the stage times are the "
                              "host's (synchronize inside the ranges to time the GPU)");
  }
}

// Traces not closed: what their GPU figures leave out, and whether they measure anything.
void warn_of_unflushed_tails(RunReport& report) {
  const int64_t window_ns = ScanOptions{}.reorder_window_ns;
  for (const RankReport& r : report.ranks) {
    const GpuBreakdown& g = r.gpu;
    if (g.unflushed_tail_ns <= 0) continue;
    report.warnings.push_back(
        "rank " + std::to_string(r.rank) + ": trace not closed: its GPU figures stop " +
        std::to_string(window_ns / 1'000'000'000) +
        " s (the reorder window) before its last GPU record, as GPU records reach the file up to that "
        "late, " +
        ms(g.unflushed_tail_ns) +
        " before its last host record; that tail is left out, and so is its stage's GPU time per "
        "micro-batch" +
        (g.shares_measured ? std::string()
                           : "; what is left covers no whole step, so its GPU shares are not measured"));
  }
}

// Where the GPU's kernel time goes, when one place is the lever: memory-bound (elementwise)
// kernels outweighing the GEMMs (an unfused framework: fusion, torch.compile), or one kernel
// taking a large share of it.
void point_at_the_lever(const RunReport& report, std::vector<std::string>& findings) {
  double elementwise = 0, gemm = 0;
  for (const CategoryStat& c : report.categories) {
    if (c.category == "elementwise") elementwise = c.share;
    if (c.category == "gemm") gemm = c.share;
  }
  constexpr double kWorthSaying = 0.20;
  if (elementwise >= kWorthSaying && elementwise > gemm) {
    findings.push_back("memory-bound (elementwise) kernels take " + percent(elementwise) +
                       " of the GPU's kernel and copy time, more than the GEMMs (" + percent(gemm) +
                       "): fusing them (torch.compile, fused kernels) is where time can be won");
  }
  int64_t all_ns = 0;
  for (const CategoryStat& c : report.categories) all_ns += c.total_ns;
  constexpr double kDominant = 0.25;
  if (!report.kernels.empty() && all_ns > 0) {
    const KernelStat& top = report.kernels.front();  // sorted by total time
    const double share = static_cast<double>(top.total_ns) / static_cast<double>(all_ns);
    if (share >= kDominant) {
      findings.push_back("one kernel takes " + percent(share) + " of the GPU's kernel and copy time (" +
                         top.category + ", " + std::to_string(top.count) + " launches" +
                         (top.category == "nccl" ? "; its time includes waiting for the other ranks" : "") +
                         "): " + top.name);
    }
  }
}

}  // namespace

void add_findings(RunReport& report) {
  auto& f = report.findings;
  const LayoutReport& l = report.layout;
  if (l.source == "inferred" || l.source == "stated") {
    std::string line = "layout (" + l.source + "): tp " + std::to_string(l.tp) + " x pp " +
                       std::to_string(l.pp) + " x dp " + std::to_string(l.dp);
    if (l.zero_shard > 1) line += ", parameters sharded over " + std::to_string(l.zero_shard);
    if (l.ep > 1) line += ", ep " + std::to_string(l.ep);
    f.push_back(line + " on " + std::to_string(l.world_size) + " ranks");
  }
  if (report.failure && report.failure->kind != "hang")
    f.push_back("failure (" + report.failure->kind + "): " + report.failure->detail);
  if (report.hang.suspected) {
    const HangReport& hang = report.hang;
    int64_t end_ns = INT64_MIN;
    for (const RankReport& r : report.ranks) end_ns = std::max(end_ns, r.last_event_ns);
    if (const std::string root = root_cause(hang, end_ns); !root.empty()) f.push_back(root);
    if (report.failure && report.failure->kind == "hang" &&
        report.failure->detail.find("watchdog") != std::string::npos)
      f.push_back("failure (hang): " + report.failure->detail);
    // The waits on a root first; a big job has hundreds more, which the hang view lists.
    std::vector<const CommHang*> order;
    for (const CommHang& h : hang.communicators) order.push_back(&h);
    auto on_root = [&](const CommHang* h) {
      return std::any_of(h->missing.begin(), h->missing.end(), [&](int32_t m) {
        return std::find(hang.root_ranks.begin(), hang.root_ranks.end(), m) != hang.root_ranks.end();
      });
    };
    std::stable_partition(order.begin(), order.end(), on_root);
    constexpr size_t kShown = 3;
    for (size_t k = 0; k < order.size() && k < kShown; ++k) {
      const CommHang& h = *order[k];
      const std::string call = h.creation ? h.next_op
                                          : (h.next_op.empty() ? std::string("collective") : h.next_op) +
                                                " #" + std::to_string(h.last_completed_by_all);
      f.push_back("hang: " + std::to_string(h.entered.size()) + " rank(s) of a " + h.role +
                  " communicator entered " + call + " and waited " + ms(h.waited_ns) + " for rank(s) " +
                  ranks_text(h.missing, h.untraced) + ", which never entered it");
    }
    for (size_t k = 0; k < hang.p2p.size() && k < kShown; ++k) {
      const P2pHang& h = hang.p2p[k];
      f.push_back("hang: rank " + std::to_string(h.rank) + " waited " + ms(h.waited_ns) + " in " + h.op +
                  (h.op == "send" ? " to" : " from") + " rank " + ranks_text({h.peer}, hang.no_trace) +
                  ", which never completed");
    }
    const size_t more =
        order.size() - std::min(order.size(), kShown) + hang.p2p.size() - std::min(hang.p2p.size(), kShown);
    if (more > 0) f.push_back("hang: " + std::to_string(more) + " more wait(s) in the hang view");
    if (!report.hang.ended_early.empty())
      f.push_back("trace ends early on rank(s) " + ranks_text(report.hang.ended_early));
  }
  for (size_t k = 0; k < report.hang.desyncs.size() && k < 3; ++k) {
    const Desync& d = report.hang.desyncs[k];
    f.push_back("desync: at " + d.role + " communicator collective #" + std::to_string(d.sequence) +
                " the members ran different operations, sizes, types or roots: " + d.what);
  }
  for (size_t k = 0; k < report.hang.p2p_mismatches.size() && k < 3; ++k) {
    const P2pMismatch& m = report.hang.p2p_mismatches[k];
    f.push_back("p2p size mismatch: rank " + std::to_string(m.sender) + "'s send #" +
                std::to_string(m.sequence) + " to rank " + std::to_string(m.receiver) + " (" + m.role +
                ") differs in size from the receive");
  }
  if (const size_t more = report.hang.desyncs.size() - std::min<size_t>(3, report.hang.desyncs.size()) +
                          report.hang.p2p_mismatches.size() -
                          std::min<size_t>(3, report.hang.p2p_mismatches.size());
      more > 0)
    f.push_back("desync: " + std::to_string(more) + " more in the hang view");
  if (report.hang.suspected) {
    if (!report.hang.no_trace.empty())
      f.push_back("no trace from rank(s) " + ranks_text(report.hang.no_trace) +
                  " (file missing, empty or header only: killed before its first flush?)");
  }
  if (!report.steps.step_ns.empty())
    f.push_back("step time " + ms(report.steps.median_ns) + " (median of " +
                std::to_string(report.steps.step_ns.size()) + " timed steps, min " + ms(report.steps.min_ns) +
                ", max " + ms(report.steps.max_ns) +
                (report.steps.unfinished > 0 ? "; " + std::to_string(report.steps.unfinished) +
                                                   " step(s) a failed NCCL call cut short left out"
                                             : "") +
                ")");
  if (report.stages.size() > 1) {
    std::string bubbles, source;
    for (const StageReport& s : report.stages) {
      bubbles += (bubbles.empty() ? "" : " ") + (s.bubble_fraction ? percent(*s.bubble_fraction) : "-");
      if (s.source != "none") source = s.source;
    }
    const bool shared = std::any_of(report.stages.begin(), report.stages.end(),
                                    [](const StageReport& s) { return s.shares_gpu; });
    if (source.empty()) {
      f.push_back(
          "pipeline bubble: not measured (no NVTX forward/backward ranges, and no p2p kernels "
          "beside compute kernels to read the schedule from)");
    } else if (shared) {
      f.push_back(
          "pipeline bubble: not measured (stages ran on one GPU: a stage waiting for its neighbour "
          "looks busy, in its NVTX ranges and in the GPU's activity alike)");
    } else {
      f.push_back("pipeline bubble per stage: " + bubbles + " (from " +
                  (source == "nvtx" ? "NVTX ranges" : "the p2p pattern") + ")");
    }
    const StageReport& first = report.stages.front();
    if (first.activation_vs_last_stage.value_or(0) > 1.05) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "memory imbalance: stage 0 holds %.1fx the activations of stage %d (1F1B)",
                    *first.activation_vs_last_stage, report.stages.back().stage);
      f.push_back(text);
    } else if (first.peak_memory_bytes > 0 && !first.activation_vs_last_stage) {
      f.push_back(
          "memory imbalance: not measured (nothing marks where the first forward starts: no NVTX "
          "forward range, step range or p2p pattern)");
    }
  }
  for (const Straggler& s : report.stragglers)
    f.push_back("straggler: rank " + std::to_string(s.rank) + " arrived last at " +
                std::to_string(s.instances_last) + " sampled collectives; the others waited " +
                ms(s.cost_ns) + " in all");
  int64_t compute = 0, exposed = 0, idle = 0, span = 0;
  bool from_first_step = !report.ranks.empty();
  for (const RankReport& r : report.ranks) {
    if (!r.gpu.shares_measured) continue;
    from_first_step = from_first_step && (r.gpu.from_first_step || !r.gpu.captured);
    compute += r.gpu.compute_ns;
    exposed += r.gpu.comm_exposed_ns;
    idle += r.gpu.idle_ns;
    span += r.gpu.span_ns;
  }
  uint32_t sampled_one_in = 0;
  for (const RankReport& r : report.ranks)
    sampled_one_in = std::max(sampled_one_in, r.gpu.kernel_sample_steps);
  if (span > 0)
    f.push_back("GPU time: compute " + percent(static_cast<double>(compute) / static_cast<double>(span)) +
                ", exposed communication " +
                percent(static_cast<double>(exposed) / static_cast<double>(span)) + ", idle " +
                percent(static_cast<double>(idle) / static_cast<double>(span)) +
                (from_first_step ? " (all ranks, from the first step on" : " (all ranks") +
                (sampled_one_in > 0 ? ", in the steps whose GPU activity was recorded)" : ")"));
  if (sampled_one_in > 0)
    f.push_back("GPU activity recorded in 1 step of " + std::to_string(sampled_one_in) +
                " (PIPESCOPE_KERNEL_SAMPLE): GPU shares, per-micro-batch GPU times and kernel statistics are "
                "those steps'; kernel totals cover only them (record with --kernel-sample 1 for every step)");
  warn_of_unflushed_tails(report);
  point_at_the_lever(report, f);
  warn_of_host_side_stage_times(report);
  warn_of_shared_gpus(report);
  if (!report.clock.unaligned_ranks.empty())
    report.warnings.push_back(
        std::to_string(report.clock.unaligned_ranks.size()) +
        " rank(s) share no collective with the others: their clocks rest on the header anchors");
}

}  // namespace pipescope::analysis
