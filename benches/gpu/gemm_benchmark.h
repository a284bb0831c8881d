// gemm/<bf16|fp16|fp8>/m:/n:/k:, gemm_layout/bf16/m:/n:/k:/pass: and
// gemm_batched/bf16/batch:/m:/n:/k:/pass:/form: through cuBLASLt (docs/calibration-results.md).
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

// Registers unfused attention's batched GEMMs (suite_batched_attention_gemms) in bf16, each as one
// strided-batched kernel, as one of its matrices and as one GEMM of all its rows. Not fitted into
// the profile yet: scripts/gpu-batched-gemm-compare.py reads them.
void register_batched_gemm_benchmarks(const DeviceInfo& device);

}  // namespace pipescope::benches
