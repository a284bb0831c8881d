// The suite's own CUDA kernels, behind a host interface that plain C++ calls: filling buffers
// with bounded pseudo-random values (zeros would let the GPU run cooler and faster than on real
// weights), and the memory-bound operations of a transformer layer. Every operand is bf16.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace pipescope::benches {

enum class ElementKind { kBf16, kFp16, kFp8E4m3 };

size_t element_bytes(ElementKind kind);

// Values in [-1, 1), the same for the same seed.
void fill_random(void* data, size_t elements, ElementKind kind, uint32_t seed, cudaStream_t stream);

// bytes: the size of one operand, a multiple of 16 (the kernels move 16-byte vectors).
void launch_copy(const void* x, void* y, size_t bytes, cudaStream_t stream);                // y = x
void launch_scale(const void* x, void* y, size_t bytes, cudaStream_t stream);               // y = 0.5 x
void launch_add(const void* x, const void* y, void* z, size_t bytes, cudaStream_t stream);  // z = x + y

// RMSNorm (Zhang & Sennrich 2019) of `rows` rows of `hidden` elements: y = x / rms(x) * w, fp32
// accumulation. hidden is a multiple of 2048 up to 8192 (one 256-thread block per row, every
// thread holding its part of the row in registers).
void launch_rms_norm(const void* x, const void* w, void* y, size_t rows, int hidden, cudaStream_t stream);
inline constexpr int kRmsNormMaxHidden = 8192;

// A kernel that does nothing: what a launch costs when the work is none.
void launch_empty(cudaStream_t stream);

// What stands in for a communication kernel beside the work it overlaps (a NCCL kernel holds one
// SM per channel and streams memory): a copy on exactly `blocks` blocks of
// kBackgroundCopyThreads threads, each copying its part of `bytes` a slice of
// kBackgroundSliceVectors 16-byte vectors (1 MiB) at a time, pausing about `pause_ns` after each
// (0: none; the pause sets how much memory traffic the SMs it holds make), until the host sets
// *stop. Device pointers to host-mapped memory (cudaHostAllocMapped): started[b] becomes 1 when
// block b runs, slices[b] is how many slices block b copied when it stopped.
inline constexpr int kBackgroundCopyMaxBlocks = 1024;
inline constexpr int kBackgroundCopyThreads = 512;
inline constexpr size_t kBackgroundSliceVectors = 65536;
struct BackgroundCopyFlags {
  volatile int* stop = nullptr;
  volatile int* started = nullptr;                // kBackgroundCopyMaxBlocks entries
  volatile unsigned long long* slices = nullptr;  // kBackgroundCopyMaxBlocks entries
};
void launch_background_copy(const void* x, void* y, size_t bytes, int blocks, unsigned pause_ns,
                            const BackgroundCopyFlags& flags, cudaStream_t stream);

}  // namespace pipescope::benches
