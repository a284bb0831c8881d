// What the report's analyses share once clocks are aligned and the layout is known.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pipescope/analysis/layout_inference.h"
#include "pipescope/analysis/report_builder.h"

namespace pipescope::analysis {

struct CommInfo {
  uint64_t comm_id = 0;
  int32_t size = 0;
  std::vector<int32_t> members;  // members[nccl_rank] = index into LoadedRun::ranks; -1 unknown
  uint32_t sample_stride = 1;    // the largest over members: a sequence kept by every member
  std::string role = "other";
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

  int64_t aligned(size_t index, int64_t t) const { return t + shift_ns[index] - origin_ns; }
};

// report_nccl.cpp
void add_nccl_reports(const ReportContext& ctx, RunReport& report);
void add_hang_report(const ReportContext& ctx, RunReport& report);
// report_stragglers.cpp
void add_stragglers(const ReportContext& ctx, RunReport& report);
// report_pipeline.cpp
void add_pipeline_reports(const ReportContext& ctx, RunReport& report);
void add_kernel_reports(const ReportContext& ctx, RunReport& report);
void add_series(const ReportContext& ctx, RunReport& report);
// report_plan.cpp
Status add_plan_comparison(const ReportContext& ctx, RunReport& report);

const char* nccl_op_name(uint8_t op);

}  // namespace pipescope::analysis
