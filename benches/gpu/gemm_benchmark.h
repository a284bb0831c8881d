// gemm/<bf16|fp16|fp8>/m:/n:/k: and gemm_layout/bf16/m:/n:/k:/pass: through cuBLASLt
// (docs/calibration-results.md).
#pragma once

#include "device_context.h"

namespace pipescope::benches {

// Registers the GEMMs of gemm_shapes.h in bf16 and fp16, and in fp8 (e4m3 inputs, bf16 output)
// when the device has FP8 tensor cores (compute capability 8.9 or later). Adds the
// cublaslt_version context key. Exits on a broken build (a bundled model that does not load).
void register_gemm_benchmarks(const DeviceInfo& device, bool quick);

// Registers the backward passes' GEMMs (suite_layout_shapes) in their own operand layouts and,
// beside each, the same shape in the forward's: the layout factors of the profile come from the
// pairs.
void register_gemm_layout_benchmarks(const DeviceInfo& device);

}  // namespace pipescope::benches
