// What `pipescope calibrate show` prints: achieved against peak for each category of a profile,
// where its numbers come from, and (HTML) the fitted curves over the measured points.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::calibrate {

// JSON schema of `calibrate show --json` and `calibrate fit --json` (docs/calibration.md).
inline constexpr int kCalibrateJsonSchemaVersion = 1;

// One compute or memory-bound category at a representative shape: what the profile predicts
// the GPU achieves, against its datasheet peak.
struct AchievedRow {
  std::string category;           // gemm_bf16, attention_forward, attention_backward, memory_bound, copy
  std::string what;               // the shape or kind, e.g. "8192x8192x8192", "seq 2048 hd 128"
  std::string unit;               // flops_per_s or bytes_per_s
  double achieved = 0, peak = 0;  // peak 0: no datasheet figure (copies)
  double fraction = 0;            // achieved / peak
  double latency_s = 0;           // copies only
};

struct CollectiveRow {
  std::string tier, kind;
  int ranks = 0;  // measured entries; 0: the single figure for every group size
  bool measured = false;
  double latency_s = 0;
  double bus_bandwidth_bytes_per_s = 0;  // the largest messages' busbw, or absolute figure
  double bus_bandwidth_fraction = 0;     // of the cluster's link, when the profile gives it so
  // The group the latency was measured on, when the entry states it: across nodes the planner
  // then grows it with NCCL's tuning model (0: one latency at every scale).
  int latency_ranks = 0, latency_nodes = 0;
};

struct ProfileSummary {
  std::string gpu, device_name, description;
  planner::Provenance provenance;
  int measured_sources = 0, other_sources = 0;  // entries measured or fitted / from publications
  std::vector<AchievedRow> achieved;
  planner::GemmWaves waves;
  std::vector<CollectiveRow> collectives;
  planner::MemoryOverheads overheads;
  planner::TrainingLosses losses;
};

ProfileSummary summarize_profile(const planner::CalibrationProfile& profile, const planner::Gpu& gpu);
void write_profile_summary(std::ostream& out, const ProfileSummary& summary);
// The summary as one JSON document with kCalibrateJsonSchemaVersion.
std::string profile_summary_json(const ProfileSummary& summary);

// One self-contained HTML page with inline SVG plots. `measured`, when given, adds the raw
// benchmark points over the profile's curves.
std::string profile_html(const planner::CalibrationProfile& profile, const planner::Gpu& gpu,
                         const BenchResults* measured);

}  // namespace pipescope::calibrate
