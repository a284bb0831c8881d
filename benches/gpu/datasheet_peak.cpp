#include "datasheet_peak.h"

#include <string>

#include "pipescope/planner/gpu.h"

namespace pipescope::benches {

std::optional<double> dense_peak_flops_per_s(std::string_view device_name, std::string_view dtype) {
  for (const std::string& name : planner::known_gpu_names()) {
    auto gpu = planner::find_gpu(name);
    if (!gpu.ok() || gpu->device_name != device_name) continue;
    const double peak = dtype == "fp8" ? gpu->peak_dense_fp8_flops_per_s : gpu->peak_dense_bf16_flops_per_s;
    if (peak > 0) return peak;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace pipescope::benches
