#include "cublaslt_gemm.h"

#include "cuda_check.h"
#include "device_buffers.h"

namespace pipescope::benches {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) fail_call(call, cublasLtGetStatusString(status));
}
#define PIPESCOPE_CUBLAS(call) check_cublas((call), #call)

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    PIPESCOPE_CUBLAS(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

// FP8 scales: cuBLASLt multiplies the e4m3 inputs by these device-side fp32 scalars (1 here: the
// data is already in range). They must be device pointers (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER).
const float* unit_scale() {
  static float* scale = [] {
    float* p = nullptr;
    const float one = 1.0f;
    PIPESCOPE_CUDA(cudaMalloc(&p, sizeof(float)));
    PIPESCOPE_CUDA(cudaMemcpy(p, &one, sizeof(float), cudaMemcpyHostToDevice));
    return p;
  }();
  return scale;
}

// `count` matrices, each `stride` elements after the one before.
void set_batch(cublasLtMatrixLayout_t layout, int64_t count, int64_t stride) {
  const auto batch = static_cast<int32_t>(count);
  PIPESCOPE_CUBLAS(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
  PIPESCOPE_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride)));
}

void set_operation(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   cublasOperation_t op) {
  PIPESCOPE_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attribute, &op, sizeof(op)));
}

}  // namespace

GemmTypeInfo gemm_type_info(GemmType type) {
  switch (type) {
    case GemmType::kBf16: return {"bf16", CUDA_R_16BF, CUDA_R_16BF, ElementKind::kBf16, 2};
    case GemmType::kFp16: return {"fp16", CUDA_R_16F, CUDA_R_16F, ElementKind::kFp16, 2};
    case GemmType::kFp8: return {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, ElementKind::kFp8E4m3, 1};
  }
  return {"bf16", CUDA_R_16BF, CUDA_R_16BF, ElementKind::kBf16, 2};
}

const char* gemm_pass_name(GemmPass pass) {
  switch (pass) {
    case GemmPass::kForward: return "forward";
    case GemmPass::kInputGradient: return "dgrad";
    case GemmPass::kWeightGradient: return "wgrad";
  }
  return "forward";
}

// Row-major C (m x n) = A B is column-major C^T (n x m) = B^T A^T: cuBLAS's first operand is our
// B^T, its second our A^T, its output our C^T (n x m, ld n). A row-major r x c matrix is the
// column-major c x r one. So our B stored n x k (forward) is column-major k x n = B, taken
// transposed (T, k x n, ld k); stored k x n (backward passes) it is column-major n x k = B^T (N,
// n x k, ld n). Our A stored m x k is column-major k x m = A^T (N, k x m, ld k); stored k x m
// (wgrad) it is column-major m x k = A, taken transposed (T, m x k, ld m).
CublasLtGemm::CublasLtGemm(const GemmShape& s, GemmType type, GemmPass pass, int64_t batch)
    : shape_(s), batch_(batch) {
  const GemmTypeInfo t = gemm_type_info(type);
  PIPESCOPE_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const bool b_stored_transposed = pass == GemmPass::kForward;
  const bool a_stored_transposed = pass == GemmPass::kWeightGradient;
  set_operation(desc_, CUBLASLT_MATMUL_DESC_TRANSA, b_stored_transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_operation(desc_, CUBLASLT_MATMUL_DESC_TRANSB, a_stored_transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
  if (type == GemmType::kFp8) {
    const float* scale = unit_scale();
    PIPESCOPE_CUBLAS(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof(scale)));
    PIPESCOPE_CUBLAS(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof(scale)));
  }
  if (b_stored_transposed) {
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, t.input, s.k, s.n, s.k));
  } else {
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, t.input, s.n, s.k, s.n));
  }
  if (a_stored_transposed) {
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, t.input, s.m, s.k, s.m));
  } else {
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, t.input, s.k, s.m, s.k));
  }
  PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&c_, t.output, s.n, s.m, s.n));
  if (batch > 1) {
    set_batch(a_, batch, s.k * s.n);
    set_batch(b_, batch, s.m * s.k);
    set_batch(c_, batch, s.m * s.n);
  }
}

CublasLtGemm::~CublasLtGemm() {
  cublasLtMatrixLayoutDestroy(c_);
  cublasLtMatrixLayoutDestroy(b_);
  cublasLtMatrixLayoutDestroy(a_);
  cublasLtMatmulDescDestroy(desc_);
}

bool CublasLtGemm::pick_algorithm() {
  cublasLtMatmulPreference_t pref = nullptr;
  PIPESCOPE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kGemmWorkspaceBytes;
  PIPESCOPE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(lt_handle(), desc_, a_, b_, c_, c_, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return false;
  algo_ = result.algo;
  return true;
}

std::string CublasLtGemm::algorithm_label() const {
  if (!algo_) return "no algorithm";
  int32_t id = -1;
  uint32_t tile = 0, stages = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&*algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&*algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&*algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages),
                                       nullptr);
  // Tile and stages are cublasLtMatmulTile_t / cublasLtMatmulStages_t values (cublasLt.h).
  return "cublasLt algo " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " +
         std::to_string(stages);
}

void CublasLtGemm::run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  // cuBLAS's first operand is our B, its second our A (see the constructor); C is not read.
  PIPESCOPE_CUBLAS(cublasLtMatmul(lt_handle(), desc_, &alpha, b, a_, a, b_, &beta, c, c_, c, c_, &*algo_,
                                  workspace, kGemmWorkspaceBytes, stream));
}

void prepare_gemm(const GemmShape& s, GemmType type, GemmPass pass, ReadyGemm& out, int64_t batch) {
  const GemmTypeInfo t = gemm_type_info(type);
  const auto matrices = static_cast<size_t>(batch);
  out.a = device_slot(0).get(matrices * static_cast<size_t>(s.m * s.k) * t.input_bytes, t.input_kind);
  out.b = device_slot(1).get(matrices * static_cast<size_t>(s.k * s.n) * t.input_bytes, t.input_kind);
  out.c = device_slot(2).get(matrices * static_cast<size_t>(s.m * s.n) * 2, ElementKind::kBf16);
  out.workspace = device_slot(3).get(kGemmWorkspaceBytes, ElementKind::kBf16);
  if (out.a == nullptr || out.b == nullptr || out.c == nullptr || out.workspace == nullptr) {
    out.why = "not enough device memory for the operands";
    return;
  }
  out.gemm.emplace(s, type, pass, batch);
  if (!out.gemm->pick_algorithm()) {
    out.gemm.reset();
    out.why = "cuBLASLt's heuristic offers no algorithm for this shape and type";
  }
}

}  // namespace pipescope::benches
