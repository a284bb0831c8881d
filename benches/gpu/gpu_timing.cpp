#include "gpu_timing.h"

namespace pipescope::benches {

GpuTimer& gpu_timer() {
  static GpuTimer timer = [] {
    GpuTimer t;
    PIPESCOPE_CUDA(cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking));
    PIPESCOPE_CUDA(cudaEventCreate(&t.start));
    PIPESCOPE_CUDA(cudaEventCreate(&t.stop));
    return t;
  }();
  return timer;
}

}  // namespace pipescope::benches
