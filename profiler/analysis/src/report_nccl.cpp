// NCCL per communicator and operation (nccl-tests bandwidth definitions). The hang view is in
// report_hang.cpp.
#include <algorithm>
#include <unordered_map>

#include "parallel_for.h"
#include "report_context.h"
#include "sample_merge.h"

namespace pipescope::analysis {
namespace {

using trace::NcclOpType;

// nccl-tests (doc/PERFORMANCE.md): algbw = S / t with S the operation's size as nccl-tests counts
// it, busbw = algbw x a factor of the rank count. The profiler records this rank's buffer bytes
// (count x datatype), which for all-gather, reduce-scatter and all-to-all is S / n.
double size_factor(uint8_t op, int32_t n) {
  switch (static_cast<NcclOpType>(op)) {
    case NcclOpType::kAllGather:
    case NcclOpType::kReduceScatter:
    case NcclOpType::kAllToAll: return n;
    default: return 1;
  }
}

double bus_factor(uint8_t op, int32_t n) {
  const double ranks = n;
  switch (static_cast<NcclOpType>(op)) {
    case NcclOpType::kAllReduce: return 2 * (ranks - 1) / ranks;
    case NcclOpType::kAllGather:
    case NcclOpType::kReduceScatter:
    case NcclOpType::kAllToAll: return (ranks - 1) / ranks;
    default: return 1;
  }
}

// One communicator's rows: per operation, totals over its members and the member that arrived
// last at the sampled instances every member reached (ties: the lowest rank).
std::vector<NcclOpReport> nccl_reports_of(const ReportContext& ctx, const CommInfo& comm) {
  std::vector<NcclOpReport> out;
  if (comm.size < 2) return out;
  std::vector<const CommDigest*> digests;
  const std::vector<MemberSamples> lists = traced_member_samples(ctx.run, comm, &digests);
  if (digests.empty()) return out;

  // slowest[op][k]: how often lists[k]'s member arrived last.
  std::array<std::vector<uint64_t>, 11> slowest;
  std::vector<MemberSample> group;
  std::vector<size_t> at;
  merge_by_sequence(
      lists, comm.sample_stride, group, at, [&](uint64_t, std::span<const MemberSample> members) {
        int32_t arrived = 0;
        const MemberSample* first = nullptr;
        const MemberSample* last = nullptr;
        int64_t first_ns = 0, last_ns = 0;
        for (const MemberSample& s : members) {
          const int64_t arrive = ctx.kernel_mode ? s.sample->start_ns : s.sample->enter_ns;
          if (arrive < 0) continue;
          const int64_t at_ns = ctx.aligned(static_cast<size_t>(s.member), arrive);
          if (first == nullptr || at_ns < first_ns) {
            first = &s;
            first_ns = at_ns;
          }
          if (last == nullptr || at_ns >= last_ns) {  // the last of equal arrivals, as std::minmax_element
            last = &s;
            last_ns = at_ns;
          }
          ++arrived;
        }
        // A tie (every member within 0.2 ms) has no slowest member.
        if (arrived != comm.size || last_ns - first_ns <= 200'000) return;
        auto& counts = slowest[std::min<uint64_t>(last->sample->op, 10)];
        counts.resize(lists.size(), 0);
        ++counts[last->position];
      });

  for (uint8_t op = 1; op <= 10; ++op) {
    OpTotals sum;
    for (const CommDigest* c : digests) {
      const OpTotals& t = c->ops[op];
      sum.calls += t.calls;
      sum.bytes += t.bytes;
      sum.time_ns += t.time_ns;
      sum.kernel_calls += t.kernel_calls;
      sum.kernel_time_ns += t.kernel_time_ns;
    }
    if (sum.calls == 0) continue;
    const auto members = static_cast<int64_t>(digests.size());
    NcclOpReport r;
    r.comm_id = comm.comm_id;
    r.role = comm.role;
    r.op = nccl_op_name(op);
    r.comm_size = comm.size;
    r.calls = sum.calls / static_cast<uint64_t>(members);
    r.bytes = static_cast<uint64_t>(static_cast<double>(sum.bytes / static_cast<uint64_t>(members)) *
                                    size_factor(op, comm.size));
    r.time_ns = (sum.kernel_calls > 0 ? sum.kernel_time_ns : sum.time_ns) / members;
    if (r.time_ns > 0) {
      r.algbw_bytes_per_s = static_cast<double>(r.bytes) / (static_cast<double>(r.time_ns) * 1e-9);
      r.busbw_bytes_per_s = r.algbw_bytes_per_s * bus_factor(op, comm.size);
    }
    for (size_t k = 0; k < slowest[op].size(); ++k) {
      const uint64_t count = slowest[op][k];
      const int32_t rank = ctx.run.global_rank[static_cast<size_t>(lists[k].member)];
      if (count > r.slowest_rank_count ||
          (count > 0 && count == r.slowest_rank_count && rank < r.slowest_rank)) {
        r.slowest_rank_count = count;
        r.slowest_rank = rank;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

const char* nccl_op_name(uint8_t op) { return trace::nccl_op_name(op); }

void add_nccl_reports(const ReportContext& ctx, RunReport& report) {
  std::vector<std::vector<NcclOpReport>> by_comm(ctx.comms.size());
  parallel_for(ctx.comms.size(), ctx.options.threads,
               [&](size_t c) { by_comm[c] = nccl_reports_of(ctx, ctx.comms[c]); });
  for (auto& rows : by_comm) report.nccl.insert(report.nccl.end(), rows.begin(), rows.end());
  std::sort(report.nccl.begin(), report.nccl.end(),
            [](const NcclOpReport& a, const NcclOpReport& b) { return a.time_ns > b.time_ns; });
}

}  // namespace pipescope::analysis
