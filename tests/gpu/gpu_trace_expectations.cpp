#include "gpu_trace_expectations.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace pipescope::inject::testing {
namespace {

struct Totals {
  std::map<std::string, uint64_t> by_kind;
  uint64_t nccl_ops = 0;
  uint64_t nccl_ops_linked = 0;
  std::vector<std::string> notices;
  uint64_t anchors = 0;
  uint64_t worst_stray_ns = 0;  // |trace clock - CLOCK_MONOTONIC| beyond the anchor's uncertainty
};

// NCCL calls reach their GPU work through two ids: the call's external id, which CUPTI's
// external-correlation records map to CUDA correlation ids, which kernels and copies carry. A
// one-rank communicator launches no kernel: NCCL copies (out of place) or does nothing (in place).
void count_trace(const LoadedTrace& t, Totals& totals) {
  totals.by_kind["kernel"] += t.all<trace::KernelRecord>().size();
  totals.by_kind["memcpy"] += t.all<trace::MemcpyRecord>().size();
  totals.by_kind["memset"] += t.all<trace::MemsetRecord>().size();
  totals.by_kind["memory"] += t.all<trace::MemoryRecord>().size();
  totals.by_kind["sync"] += t.all<trace::SyncRecord>().size();
  totals.by_kind["nvtx"] += t.all<trace::NvtxRecord>().size();
  const auto ops = t.all<trace::NcclOpRecord>();
  totals.by_kind["nccl"] += ops.size() + t.all<trace::NcclCommRecord>().size();

  std::unordered_set<uint32_t> work_correlations;
  for (const auto& k : t.all<trace::KernelRecord>()) work_correlations.insert(k.correlation_id);
  for (const auto& c : t.all<trace::MemcpyRecord>()) work_correlations.insert(c.correlation_id);
  for (const auto& m : t.all<trace::MemsetRecord>()) work_correlations.insert(m.correlation_id);
  std::unordered_set<uint64_t> linked_external_ids;
  for (const auto& c : t.all<trace::ExternalCorrelationRecord>()) {
    if (work_correlations.count(c.correlation_id) != 0) linked_external_ids.insert(c.external_id);
  }
  for (const auto& op : ops) {
    ++totals.nccl_ops;
    if (op.external_correlation_id != 0 && linked_external_ids.count(op.external_correlation_id) != 0) {
      ++totals.nccl_ops_linked;
    }
  }
  totals.anchors += t.anchors.size();
  totals.worst_stray_ns = std::max(totals.worst_stray_ns, trace::anchor_stray_ns(t.anchors));
  for (const auto& n : t.all<trace::NoticeRecord>()) {
    totals.notices.push_back(t.path + ": notice " + std::to_string(n.code) + " count " +
                             std::to_string(n.count) +
                             (n.message_id != 0 ? " " + std::string(t.text(n.message_id)) : ""));
  }
}

}  // namespace

Expected<GpuTraceVerdict> check_gpu_traces(const std::vector<LoadedTrace>& traces,
                                           const std::vector<std::string>& expected) {
  static const std::unordered_set<std::string> kKnown = {
      "kernel", "memcpy", "memset", "memory", "sync", "nccl", "nccl-linked", "nccl-linked-any", "nvtx"};
  for (const std::string& item : expected) {
    if (kKnown.count(item) == 0) return Error{"unknown expectation '" + item + "'"};
  }
  GpuTraceVerdict verdict;
  Totals totals;
  for (const LoadedTrace& t : traces) count_trace(t, totals);
  verdict.report += "traces: " + std::to_string(traces.size()) + "\n";
  for (const auto& [kind, count] : totals.by_kind)
    verdict.report += kind + ": " + std::to_string(count) + "\n";
  verdict.report += "nccl calls linked to their GPU work: " + std::to_string(totals.nccl_ops_linked) +
                    " of " + std::to_string(totals.nccl_ops) + "\n";
  verdict.report += "clock anchors: " + std::to_string(totals.anchors) + ", the trace clock at most " +
                    std::to_string(totals.worst_stray_ns) +
                    " ns from CLOCK_MONOTONIC beyond their uncertainty\n";
  for (const std::string& notice : totals.notices) verdict.report += notice + "\n";
  if (traces.empty()) verdict.failures.emplace_back("no trace files");
  if (totals.worst_stray_ns > kMaxClockStrayNs) {
    verdict.failures.push_back("the trace clock strays " + std::to_string(totals.worst_stray_ns) +
                               " ns from CLOCK_MONOTONIC at an anchor");
  }
  for (const std::string& item : expected) {
    if (item == "nccl-linked") {
      if (totals.nccl_ops == 0 || totals.nccl_ops_linked != totals.nccl_ops) {
        verdict.failures.emplace_back("not every NCCL call is linked to its GPU work");
      }
    } else if (item == "nccl-linked-any") {
      if (totals.nccl_ops_linked == 0) verdict.failures.emplace_back("no NCCL call is linked to GPU work");
    } else if (totals.by_kind[item] == 0) {
      verdict.failures.push_back("no " + item + " records");
    }
  }
  for (const std::string& failure : verdict.failures) verdict.report += "FAILED: " + failure + "\n";
  return verdict;
}

}  // namespace pipescope::inject::testing
