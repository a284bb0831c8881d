// The dense tensor-core peak a GEMM is compared with (peak_fraction): the datasheet numbers of
// the planner's bundled GPU descriptions (planner/hardware/data/gpus/*.json), found by the name
// CUDA reports (any spelling planner::identify_gpu knows). Pure logic: no CUDA.
#pragma once

#include <optional>
#include <string_view>

namespace pipescope::benches {

// `dtype` is bf16, fp16 or fp8. Empty when planner::identify_gpu finds no bundled GPU, or when the
// bundled one lists no peak for the type (fp8 on A100). FP16 and BF16 dense peaks are the same
// on every bundled GPU (A100, H100, H200 datasheets), so fp16 uses the bf16 figure.
std::optional<double> dense_peak_flops_per_s(std::string_view device_name, std::string_view dtype);

}  // namespace pipescope::benches
