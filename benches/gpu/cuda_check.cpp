#include "cuda_check.h"

#include <cstdio>
#include <cstdlib>

namespace pipescope::benches {
namespace {
const char* g_program = "pipescope bench";
}  // namespace

void set_program_name(const char* name) { g_program = name; }
const char* program_name() { return g_program; }

void fail_call(const char* call, const char* what) {
  std::fprintf(stderr, "%s: %s failed: %s\n", g_program, call, what);
  std::exit(1);
}

std::string no_gpu_reason() {
  int count = 0;
  // Without a driver (CI: the toolkit but no GPU) this fails with cudaErrorInsufficientDriver
  // or cudaErrorNoDevice; neither creates a context.
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return std::string("no GPU: cudaGetDeviceCount: ") + cudaGetErrorString(status);
  if (count == 0) return "no GPU: cudaGetDeviceCount found no CUDA device";
  return "";
}

}  // namespace pipescope::benches
