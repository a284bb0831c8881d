#include "datasheet_peak.h"

#include "pipescope/planner/gpu.h"

namespace pipescope::benches {

std::optional<double> dense_peak_flops_per_s(std::string_view device_name, std::string_view dtype) {
  auto gpu = planner::identify_gpu(device_name);
  if (!gpu.ok()) return std::nullopt;
  const double peak = dtype == "fp8" ? gpu->peak_dense_fp8_flops_per_s : gpu->peak_dense_bf16_flops_per_s;
  if (peak > 0) return peak;
  return std::nullopt;
}

}  // namespace pipescope::benches
