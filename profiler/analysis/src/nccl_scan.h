// The rank scan's NCCL side: communicators and their collectives, point-to-point pairs, the
// flight recorder's calls in flight, and each call joined to its kernel through the
// correlation records (nccl_join.h). Fed by rank_scan.cpp.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nccl_join.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/records.h"
#include "rank_scan_detail.h"

namespace pipescope::analysis::detail {

class NcclScan {
 public:
  NcclScan(ScanClock& clock, const ScanOptions& options)
      : clock_(clock), d_(clock.d), options_(options), join_(options.join_horizon_ns) {}

  void on_comm(const trace::NcclCommRecord& r);
  void on_call(const trace::NcclCallRecord& r);
  void on_op(const trace::NcclOpRecord& r);
  // An NCCL kernel (by name) and a link between a CUDA correlation and an NCCL call.
  void on_kernel(uint32_t correlation_id, KernelSpan span);
  void on_link(uint32_t correlation_id, uint64_t external_id);

  // The entry of the latest NCCL call that failed (INT64_MIN: none).
  const int64_t& latest_failure_ns() const { return latest_failure_ns_; }

  // First of the scan's finish: calls that never returned count as entered.
  void finish_open_calls();
  void finish();

 private:
  struct OpRef {
    uint32_t comm_index;
    uint8_t op;
    uint64_t sequence;
    bool p2p;
    uint32_t p2p_index;
  };

  uint32_t comm_index(uint64_t comm_id);
  uint32_t p2p_index(uint64_t comm_id, int32_t peer, bool send);
  void add_sample(uint32_t& stride, std::vector<InstanceSample>& samples, uint64_t sequence, int64_t enter_ns,
                  int64_t exit_ns, uint8_t op, uint16_t fingerprint);
  void on_matched(const OpRef& ref, const KernelSpan& span);
  auto matched() {
    return [this](const OpRef& ref, const KernelSpan& span) { on_matched(ref, span); };
  }

  ScanClock& clock_;
  RankDigest& d_;
  const ScanOptions& options_;
  std::unordered_map<uint64_t, uint32_t> comm_index_;
  NcclKernelJoin<OpRef> join_;
  // Flight records: calls seen in flight and not returned (the latest sighting), and calls that
  // returned (8 bytes per call a flush caught running).
  std::unordered_map<uint64_t, OpenCall> open_by_key_;
  std::unordered_set<uint64_t> returned_;
  int64_t host_p2p_ns_ = 0, kernel_p2p_ns_ = 0;
  int64_t latest_failure_ns_ = INT64_MIN;
};

}  // namespace pipescope::analysis::detail
