// The GPU smoke program (scripts/gpu-smoke.sh): one process, one GPU, one NCCL rank. It makes
// every kind of activity the profiler records — copies, a memset, a kernel, cudaMalloc and
// cudaMallocAsync memory, NCCL calls alone and in a group, NVTX ranges — and checks its own
// results, so that a profiler that changed them is caught too.
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));          \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define CHECK_NCCL(call)                                                                 \
  do {                                                                                   \
    ncclResult_t res_ = (call);                                                          \
    if (res_ != ncclSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #call, ncclGetErrorString(res_));          \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__global__ void scale(float* x, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

}  // namespace

int main() {
  constexpr int kN = 1 << 20;
  constexpr int kSteps = 3;
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));

  // Separate buffers in and out: each step starts again from ones.
  const std::vector<float> input(kN, 1.0f);
  std::vector<float> output(kN, 0.0f);
  float* x = nullptr;
  float* y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kN * sizeof(float)));
  for (int step = 0; step < kSteps; ++step) {
    nvtxRangePushA("train_step");
    nvtxRangePushA("forward");
    CHECK_CUDA(cudaMemsetAsync(x, 0, kN * sizeof(float), stream));
    CHECK_CUDA(cudaMemcpyAsync(x, input.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream));
    scale<<<(kN + 255) / 256, 256, 0, stream>>>(x, kN, 2.0f);
    CHECK_CUDA(cudaGetLastError());
    nvtxRangePop();
    nvtxRangePushA("backward");
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&y), kN * sizeof(float), stream));
    CHECK_NCCL(ncclAllReduce(x, y, kN, ncclFloat, ncclSum, comm, stream));
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(y, y, kN, ncclFloat, ncclSum, comm, stream));
    CHECK_NCCL(ncclBroadcast(y, x, kN, ncclFloat, 0, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    CHECK_CUDA(cudaFreeAsync(y, stream));
    nvtxRangePop();
    CHECK_CUDA(cudaMemcpyAsync(output.data(), x, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    nvtxRangePop();
    for (int i = 0; i < kN; i += kN / 7) {
      if (output[i] != 2.0f) {
        std::fprintf(stderr, "wrong result at step %d: x[%d] = %f, want 2\n", step, i, output[i]);
        return 1;
      }
    }
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("cuda-nccl smoke: %d steps ok\n", kSteps);
  return 0;
}
