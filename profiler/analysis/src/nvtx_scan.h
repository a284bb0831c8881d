// The rank scan's NVTX side: ranges pushed and popped per thread or started and ended by id,
// named step, forward, backward or stage by the user's patterns (ScanOptions::nvtx), and folded
// into steps (nvtx_steps.h). A step's start also tells the GPU timeline. Fed by rank_scan.cpp.
#pragma once

#include <cstdint>
#include <regex>
#include <unordered_map>
#include <vector>

#include "gpu_timeline.h"
#include "nvtx_steps.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_summary.h"
#include "rank_scan_detail.h"

namespace pipescope::analysis::detail {

class NvtxScan {
 public:
  // `strings`: the trace's string table as read so far; `latest_failure_ns`: the entry of the
  // latest NCCL call that failed, which a step that contains it is marked with.
  NvtxScan(ScanClock& clock, const ScanOptions& options, const trace::StringTable& strings, GpuTimeline& gpu,
           const int64_t& latest_failure_ns);

  void on_record(const trace::NvtxRecord& r);
  void finish() { steps_.finish(); }

 private:
  enum class NameClass : uint8_t { kUnknown, kStep, kForward, kBackward, kStage, kOther };
  struct OpenRange {
    uint32_t name_id;
    int64_t start_ns;
  };

  NameClass classify(uint32_t name_id);
  void on_range(uint32_t name_id, int64_t start, int64_t end);
  void declare_stage(uint32_t name_id);

  ScanClock& clock_;
  RankDigest& d_;
  const trace::StringTable& strings_;
  GpuTimeline& gpu_;
  const int64_t& latest_failure_ns_;
  std::regex step_re_, forward_re_, backward_re_;
  std::vector<NameClass> name_classes_;
  std::unordered_map<uint32_t, std::vector<OpenRange>> open_by_thread_;
  std::unordered_map<uint64_t, OpenRange> open_by_id_;
  NvtxSteps steps_;
};

}  // namespace pipescope::analysis::detail
