// Checked CUDA calls for the suite's programs: a failure is one line on stderr naming the call
// and the error, then exit 1. A benchmark that must not run on a bad number never does.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace pipescope::benches {

// The name the error lines start with, e.g. "gpu_benchmark".
void set_program_name(const char* name);
const char* program_name();

[[noreturn]] void fail_call(const char* call, const char* what);

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) fail_call(call, cudaGetErrorString(status));
}

// Empty when a CUDA device is usable; otherwise the line to print ("no GPU: ..."), after which
// the program writes nothing and exits 0 (docs/calibration-results.md).
std::string no_gpu_reason();

}  // namespace pipescope::benches

#define PIPESCOPE_CUDA(call) ::pipescope::benches::check_cuda((call), #call)
