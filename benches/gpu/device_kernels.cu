#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda_check.h"
#include "device_kernels.h"

namespace pipescope::benches {
namespace {

constexpr int kThreads = 256;
constexpr int kVectorElements = 8;  // bf16 per uint4

__device__ float uniform(size_t i, uint32_t seed) {
  // A 64-bit mix (splitmix64's finalizer) of index and seed: no state, any order.
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill_kernel(void* data, size_t n, int kind, uint32_t seed) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = uniform(i, seed);
  if (kind == static_cast<int>(ElementKind::kBf16)) {
    static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
  } else if (kind == static_cast<int>(ElementKind::kFp16)) {
    static_cast<__half*>(data)[i] = __float2half(v);
  } else {
    static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(v);
  }
}

__global__ void copy_kernel(const uint4* x, uint4* y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

__device__ uint4 scale_vector(uint4 v, float a) {
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
  for (int j = 0; j < 4; ++j) {
    float2 f = __bfloat1622float2(h[j]);
    h[j] = __floats2bfloat162_rn(f.x * a, f.y * a);
  }
  return v;
}

__global__ void scale_kernel(const uint4* x, uint4* y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale_vector(x[i], 0.5f);
}

__global__ void add_kernel(const uint4* x, const uint4* y, uint4* z, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint4 a = x[i];
  uint4 b = y[i];
  __nv_bfloat162* ha = reinterpret_cast<__nv_bfloat162*>(&a);
  const __nv_bfloat162* hb = reinterpret_cast<const __nv_bfloat162*>(&b);
  for (int j = 0; j < 4; ++j) {
    const float2 fa = __bfloat1622float2(ha[j]);
    const float2 fb = __bfloat1622float2(hb[j]);
    ha[j] = __floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y);
  }
  z[i] = a;
}

constexpr int kMaxVectorsPerThread = kRmsNormMaxHidden / kVectorElements / kThreads;  // 4

__global__ void rms_norm_kernel(const uint4* x, const uint4* w, uint4* y, int vectors_per_row) {
  const uint4* row = x + static_cast<size_t>(blockIdx.x) * vectors_per_row;
  uint4* out = y + static_cast<size_t>(blockIdx.x) * vectors_per_row;
  const int per_thread = vectors_per_row / kThreads;
  uint4 v[kMaxVectorsPerThread];
  float sum = 0;
  for (int j = 0; j < per_thread; ++j) {
    v[j] = row[j * kThreads + threadIdx.x];
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v[j]);
    for (int e = 0; e < 4; ++e) {
      const float2 f = __bfloat1622float2(h[e]);
      sum += f.x * f.x + f.y * f.y;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float inverse_rms;
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
    inverse_rms = rsqrtf(total / (vectors_per_row * kVectorElements) + 1e-6f);
  }
  __syncthreads();
  for (int j = 0; j < per_thread; ++j) {
    const int index = j * kThreads + threadIdx.x;
    uint4 weight = w[index];
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v[j]);
    const __nv_bfloat162* hw = reinterpret_cast<const __nv_bfloat162*>(&weight);
    for (int e = 0; e < 4; ++e) {
      const float2 f = __bfloat1622float2(h[e]);
      const float2 g = __bfloat1622float2(hw[e]);
      h[e] = __floats2bfloat162_rn(f.x * inverse_rms * g.x, f.y * inverse_rms * g.y);
    }
    out[index] = v[j];
  }
}

// One block per SM it runs on: every block copies its own part of x into y, a slice at a time
// round and round, pausing `pause_ns` after each slice, until the host sets *stop; each block says
// when it started and how many slices it copied.
__global__ void background_copy_kernel(const uint4* x, uint4* y, size_t n, unsigned pause_ns,
                                       const volatile int* stop, volatile int* started,
                                       volatile unsigned long long* slices) {
  __shared__ int halt;
  if (threadIdx.x == 0) {
    started[blockIdx.x] = 1;
    __threadfence_system();
  }
  const size_t part = n / gridDim.x / kBackgroundSliceVectors * kBackgroundSliceVectors;
  const uint4* from = x + part * blockIdx.x;
  uint4* to = y + part * blockIdx.x;
  unsigned long long done = 0;
  for (size_t offset = 0;; offset = (offset + kBackgroundSliceVectors) % part) {
    for (size_t i = threadIdx.x; i < kBackgroundSliceVectors; i += blockDim.x)
      to[offset + i] = from[offset + i];
    ++done;
    for (unsigned waited = 0; waited < pause_ns; waited += 1000) __nanosleep(1000);
    __syncthreads();
    if (threadIdx.x == 0) halt = *stop;
    __syncthreads();
    if (halt != 0) break;
  }
  if (threadIdx.x == 0) {
    slices[blockIdx.x] = done;
    __threadfence_system();
  }
}

__global__ void empty_kernel() {}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

size_t element_bytes(ElementKind kind) { return kind == ElementKind::kFp8E4m3 ? 1 : 2; }

void fill_random(void* data, size_t elements, ElementKind kind, uint32_t seed, cudaStream_t stream) {
  fill_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(data, elements, static_cast<int>(kind), seed);
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_copy(const void* x, void* y, size_t bytes, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint4*>(y),
                                                      n);
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_scale(const void* x, void* y, size_t bytes, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint4*>(y),
                                                       n);
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_add(const void* x, const void* y, void* z, size_t bytes, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(x),
                                                     static_cast<const uint4*>(y), static_cast<uint4*>(z), n);
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_rms_norm(const void* x, const void* w, void* y, size_t rows, int hidden, cudaStream_t stream) {
  if (hidden <= 0 || hidden > kRmsNormMaxHidden || hidden % (kThreads * kVectorElements) != 0)
    fail_call("launch_rms_norm", "hidden must be a multiple of 2048 up to 8192");
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const uint4*>(x), static_cast<const uint4*>(w), static_cast<uint4*>(y),
      hidden / kVectorElements);
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  PIPESCOPE_CUDA(cudaGetLastError());
}

void launch_background_copy(const void* x, void* y, size_t bytes, int blocks, unsigned pause_ns,
                            const BackgroundCopyFlags& flags, cudaStream_t stream) {
  if (blocks <= 0 || blocks > kBackgroundCopyMaxBlocks)
    fail_call("launch_background_copy", "blocks must be 1 to kBackgroundCopyMaxBlocks");
  if (bytes / sizeof(uint4) / static_cast<size_t>(blocks) < kBackgroundSliceVectors)
    fail_call("launch_background_copy", "bytes must give every block at least one slice");
  background_copy_kernel<<<static_cast<unsigned>(blocks), kBackgroundCopyThreads, 0, stream>>>(
      static_cast<const uint4*>(x), static_cast<uint4*>(y), bytes / sizeof(uint4), pause_ns, flags.stop,
      flags.started, flags.slices);
  PIPESCOPE_CUDA(cudaGetLastError());
}

}  // namespace pipescope::benches
