// One cuBLASLt GEMM, row-major C (m x n) = A (m x k) B (k x n), in the operand layout of one of a
// linear layer's three passes, with cuBLASLt's first heuristic choice: what the GEMM table, the
// backward-layout, sustained-clock and interference benchmarks all launch.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "device_kernels.h"
#include "gemm_shapes.h"

namespace pipescope::benches {

enum class GemmType { kBf16, kFp16, kFp8 };

struct GemmTypeInfo {
  const char* variant;  // bf16, fp16, fp8
  cudaDataType_t input, output;
  ElementKind input_kind;
  size_t input_bytes;
};
GemmTypeInfo gemm_type_info(GemmType type);

// How a linear layer y = x W^T (PyTorch's nn.Linear, W stored out x in) lays out each GEMM,
// row-major: the forward reads A = x as stored and B = W^T, W stored n x k; the input gradient
// dx = dy W reads both as stored; the weight gradient dW = dy^T x reads A = dy^T from dy stored
// k x m, and B = x as stored. FP8 has the forward layout only (cuBLASLt on Ada and Hopper).
const char* gemm_pass_name(GemmPass pass);  // forward, dgrad, wgrad

// cuBLASLt's recommendation for Hopper is 32 MiB of workspace (cuBLAS documentation, "cuBLASLt
// workspace"); A100 needs less, and more never hurts the heuristic.
inline constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

class CublasLtGemm {
 public:
  // `batch` > 1: that many matrices of `shape`, packed one after another in each operand, in one
  // strided-batched kernel.
  CublasLtGemm(const GemmShape& shape, GemmType type, GemmPass pass, int64_t batch = 1);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // The heuristic's first choice within the workspace; false when cuBLASLt has none.
  bool pick_algorithm();
  std::string algorithm_label() const;  // "cublasLt algo 21 tile 18 stages 20"

  // C = A B (alpha 1, beta 0); a, b as the pass stores them (see above), each at least
  // m k and k n elements; c m n bf16 elements (each times the batch); workspace
  // kGemmWorkspaceBytes.
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

  double flops() const {
    return 2.0 * static_cast<double>(batch_) * static_cast<double>(shape_.m) * static_cast<double>(shape_.n) *
           static_cast<double>(shape_.k);
  }

 private:
  GemmShape shape_;
  int64_t batch_ = 1;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  std::optional<cublasLtMatmulAlgo_t> algo_;
};

// A GEMM with its operands in the program's device slots 0-3, ready to launch: what the
// benchmarks that time one shape over and over hold. Empty with `why` set when the device has
// not the memory or cuBLASLt no algorithm.
struct ReadyGemm {
  std::optional<CublasLtGemm> gemm;
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  std::string why;
  void run(cudaStream_t stream) const { gemm->run(a, b, c, workspace, stream); }
};
// Fills `out` (not copyable: cuBLASLt's descriptors are owned).
void prepare_gemm(const GemmShape& shape, GemmType type, GemmPass pass, ReadyGemm& out, int64_t batch = 1);

}  // namespace pipescope::benches
