// What the report's analyses share once clocks are aligned and the layout is known.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pipescope/analysis/layout_inference.h"
#include "pipescope/analysis/report_builder.h"
#include "sample_merge.h"

namespace pipescope::analysis {

struct CommInfo {
  uint64_t comm_id = 0;
  int32_t size = 0;
  std::vector<int32_t> members;  // members[nccl_rank] = index into LoadedRun::ranks; -1 no trace
  // ranks[nccl_rank] = global rank: of the member's trace, or worked out from the others'
  // records when the member left none (untraced_members.h); -1 when that cannot be told.
  std::vector<int32_t> ranks;
  uint32_t sample_stride = 1;  // the largest over members: a sequence kept by every member
  std::string role = "other";

  // Every member's global rank is known (traced or worked out): usable for the layout.
  bool known() const {
    return size >= 2 && std::none_of(ranks.begin(), ranks.end(), [](int32_t r) { return r < 0; });
  }
  bool traced(size_t nccl_rank) const { return members[nccl_rank] >= 0; }
  bool all_traced() const {
    return std::none_of(members.begin(), members.end(), [](int32_t m) { return m < 0; });
  }
};

struct ReportContext {
  const LoadedRun& run;
  const ReportOptions& options;
  // Aligned time of rank i's raw timestamp t: t + shift_ns[i] - origin_ns.
  std::vector<int64_t> shift_ns;
  int64_t origin_ns = 0;
  bool kernel_mode = false;  // NCCL kernels were captured: arrivals and ends come from kernels
  std::vector<CommInfo> comms;
  std::unordered_map<uint64_t, size_t> comm_by_id;
  std::unordered_map<int32_t, size_t> index_of_rank;  // global rank -> index
  int32_t pp = 1;                                     // the layout's, once known
  std::vector<RankCoordinates> coordinates;           // per global rank, once the layout is known
  // The first step (warm-up: lazy NCCL connections, start-up skew between ranks) ends here on
  // the aligned clock; INT64_MIN when unknown. Stragglers are judged after it.
  int64_t warmup_end_ns = INT64_MIN;

  int64_t aligned(size_t index, int64_t t) const { return t + shift_ns[index] - origin_ns; }
  int64_t local(size_t index, int64_t aligned_ns) const { return aligned_ns - shift_ns[index] + origin_ns; }
};

// report_comms.cpp: communicators across ranks, and what layout inference reads of them.
void collect_comms(const LoadedRun& run, std::vector<CommInfo>& comms,
                   std::unordered_map<uint64_t, size_t>& comm_by_id);
const CommDigest* digest_of(const RankDigest& d, uint64_t comm_id);
const P2pDigest* p2p_of(const RankDigest& d, uint64_t comm_id, int32_t peer, bool send);
// The samples of the communicator's traced members, in member order, for merge_by_sequence;
// `digests` (when given) receives each one's digest.
std::vector<MemberSamples> traced_member_samples(const LoadedRun& run, const CommInfo& comm,
                                                 std::vector<const CommDigest*>* digests = nullptr);
std::vector<CommunicatorTraffic> layout_traffic(const ReportContext& ctx);
std::vector<P2pFlow> layout_flows(const ReportContext& ctx);
// Global ranks without a trace, or whose trace holds no communicator: they may have died first.
std::vector<int32_t> silent_ranks(const LoadedRun& run);

// report_clock.cpp: the run's common clock (ctx.comms and comm_by_id collected).
RunTimebase align(const ReportContext& ctx);

// report_findings.cpp
void add_findings(RunReport& report);

// report_nccl.cpp
void add_nccl_reports(const ReportContext& ctx, RunReport& report);
// report_hang.cpp
void add_hang_report(const ReportContext& ctx, RunReport& report);
// report_failure.cpp: after the hang view.
void add_failure(const ReportContext& ctx, RunReport& report);
// A signal the profiler's fatal-signal handler records (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL).
bool is_fatal_signal(int32_t signal);
// report_stragglers.cpp: every rank's waits (in collectives, and for its peer in p2p), and the
// stragglers.
void add_stragglers(const ReportContext& ctx, RunReport& report);
// report_pipeline.cpp
void add_pipeline_reports(const ReportContext& ctx, RunReport& report);
void add_kernel_reports(const ReportContext& ctx, RunReport& report);
void add_series(const ReportContext& ctx, RunReport& report);
// report_plan.cpp
Status add_plan_comparison(const ReportContext& ctx, RunReport& report);

const char* nccl_op_name(uint8_t op);

}  // namespace pipescope::analysis
