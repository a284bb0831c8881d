// One fuzz target for the JSON a user hands the planner and the calibration: the first byte picks
// the parser, the rest is its text. Model files (a Hugging Face config.json or pipescope's own
// model JSON), GPU and cluster descriptions, calibration profiles, Google Benchmark result files.
// Every input must come back as a value or an error, never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/gpu.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace pipescope;
  switch (data[0] % 5) {
    case 0: (void)models::parse_model_file(text, "fuzz", "fuzz input"); break;
    case 1: (void)planner::parse_gpu_json(text, "fuzz input"); break;
    case 2: (void)planner::parse_cluster_json(text, "fuzz input"); break;
    case 3: (void)planner::parse_calibration_profile(text, "fuzz input"); break;
    default: {
      calibrate::BenchResults results;
      (void)calibrate::add_bench_results(text, "fuzz input", results);
    }
  }
  return 0;
}
