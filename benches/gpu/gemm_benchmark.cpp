#include "gemm_benchmark.h"

#include <benchmark/benchmark.h>
#include <cublasLt.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "datasheet_peak.h"
#include "device_buffers.h"
#include "gemm_shapes.h"
#include "gpu_timing.h"

namespace pipescope::benches {
namespace {

// cuBLAS's recommendation for Hopper is 32 MiB of workspace (cuBLAS documentation, "cuBLASLt
// workspace"); A100 needs less, and more never hurts the heuristic.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
// FLOPs per timed iteration: ~0.2 ms at the H100's peak, so events cost under a percent.
constexpr double kFlopsPerIteration = 2e11;
// GPU seconds per GEMM benchmark. The full suite has ~3,000 of them (985 shapes x 3
// types); at Google Benchmark's default 0.5 s that is half an hour per repetition. A GEMM under
// a millisecond still runs hundreds of times in 0.1 s; the largest (llama3-405b's MLP at TP 1,
// ~80 ms) run twice, where the variation between launches is small anyway.
constexpr double kMinSeconds = 0.1;

enum class GemmType { kBf16, kFp16, kFp8 };

struct TypeInfo {
  const char* variant;
  cudaDataType_t input, output;
  ElementKind input_kind;
};

TypeInfo type_info(GemmType type) {
  switch (type) {
    case GemmType::kBf16: return {"bf16", CUDA_R_16BF, CUDA_R_16BF, ElementKind::kBf16};
    case GemmType::kFp16: return {"fp16", CUDA_R_16F, CUDA_R_16F, ElementKind::kFp16};
    case GemmType::kFp8: return {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, ElementKind::kFp8E4m3};
  }
  return {"bf16", CUDA_R_16BF, CUDA_R_16BF, ElementKind::kBf16};
}

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

// The descriptors of one GEMM, destroyed with it.
class Matmul {
 public:
  Matmul(const GemmShape& s, GemmType type) {
    const TypeInfo t = type_info(type);
    PIPESCOPE_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // Row-major C (m x n) = A (m x k) B (k x n) is column-major C^T (n x m) = B^T A^T. The
    // "TN" form below is what PyTorch's nn.Linear runs (weight n x k row-major, used
    // transposed) and the only one cuBLASLt offers for FP8 on Ada and Hopper.
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    PIPESCOPE_CUBLAS(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    PIPESCOPE_CUBLAS(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    if (type == GemmType::kFp8) {
      const float* scale = unit_scale();
      PIPESCOPE_CUBLAS(
          cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof(scale)));
      PIPESCOPE_CUBLAS(
          cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof(scale)));
    }
    // cuBLAS's A is our B^T stored k x n (ld k), its B our A^T stored k x m (ld k), its C and
    // D our C^T, n x m (ld n).
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, t.input, s.k, s.n, s.k));
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, t.input, s.k, s.m, s.k));
    PIPESCOPE_CUBLAS(cublasLtMatrixLayoutCreate(&c_, t.output, s.n, s.m, s.n));
  }
  ~Matmul() {
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatmulDescDestroy(desc_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // The heuristic's first choice within the workspace; empty when cuBLASLt has none.
  std::optional<cublasLtMatmulAlgo_t> pick_algorithm() const {
    cublasLtMatmulPreference_t pref = nullptr;
    PIPESCOPE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t workspace = kWorkspaceBytes;
    PIPESCOPE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &workspace, sizeof(workspace)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lt_handle(), desc_, a_, b_, c_, c_, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS)
      return std::nullopt;
    return result.algo;
  }

  // D = A B (alpha 1, beta 0: C is not read, so D stands in for it).
  void run(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d, void* workspace,
           cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    PIPESCOPE_CUBLAS(cublasLtMatmul(lt_handle(), desc_, &alpha, a, a_, b, b_, &beta, d, c_, d, c_, &algo,
                                    workspace, kWorkspaceBytes, stream));
  }

 private:
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
};

std::string algorithm_label(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = -1;
  uint32_t tile = 0, stages = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages),
                                       nullptr);
  // Tile and stages are cublasLtMatmulTile_t / cublasLtMatmulStages_t values (cublasLt.h).
  return "cublasLt algo " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " +
         std::to_string(stages);
}

double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

void run_gemm(benchmark::State& state, GemmShape s, GemmType type, std::optional<double> peak) {
  const TypeInfo t = type_info(type);
  const size_t in_bytes = type == GemmType::kFp8 ? 1 : 2;
  // Our A (m x k) is cuBLAS's B, our B (k x n) cuBLAS's A; see Matmul.
  void* ours_a = device_slot(0).get(static_cast<size_t>(s.m * s.k) * in_bytes, t.input_kind);
  void* ours_b = device_slot(1).get(static_cast<size_t>(s.k * s.n) * in_bytes, t.input_kind);
  void* c = device_slot(2).get(static_cast<size_t>(s.m * s.n) * 2, ElementKind::kBf16);
  void* workspace = device_slot(3).get(kWorkspaceBytes, ElementKind::kBf16);
  if (ours_a == nullptr || ours_b == nullptr || c == nullptr || workspace == nullptr) {
    state.SkipWithError("not enough device memory for the operands");
    return;
  }
  const Matmul matmul(s, type);
  const std::optional<cublasLtMatmulAlgo_t> algo = matmul.pick_algorithm();
  if (!algo) {
    state.SkipWithError("cuBLASLt's heuristic offers no algorithm for this shape and type");
    return;
  }
  state.SetLabel(algorithm_label(*algo));
  const double flops = gemm_flops(s);
  const double total_s = time_launches(state, batch_for(flops, kFlopsPerIteration), [&](cudaStream_t stream) {
    matmul.run(*algo, ours_b, ours_a, c, workspace, stream);
  });
  const double iterations = static_cast<double>(state.iterations());
  state.counters["flops"] = flops;
  state.counters["flops_per_s"] = benchmark::Counter(flops * iterations, benchmark::Counter::kIsRate);
  if (peak && total_s > 0) state.counters["peak_fraction"] = flops * iterations / total_s / *peak;
}

}  // namespace

void register_gemm_benchmarks(const DeviceInfo& device, bool quick) {
  const SuiteShapes shapes = suite_gemm_shapes(quick);
  if (!shapes.error.empty()) fail_call("suite_gemm_shapes", shapes.error.c_str());
  benchmark::AddCustomContext("cublaslt_version", std::to_string(cublasLtGetVersion()));
  std::vector<GemmType> types = {GemmType::kBf16, GemmType::kFp16};
  // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
  if (device.cc_major * 10 + device.cc_minor >= 89) types.push_back(GemmType::kFp8);
  for (GemmType type : types) {
    const TypeInfo t = type_info(type);
    const std::optional<double> peak = dense_peak_flops_per_s(device.name, t.variant);
    for (const GemmShape& s : shapes.shapes) {
      if (type == GemmType::kFp8 && !fp8_compatible(s)) continue;
      const std::string name = std::string("gemm/") + t.variant + "/m:" + std::to_string(s.m) +
                               "/n:" + std::to_string(s.n) + "/k:" + std::to_string(s.k);
      benchmark::RegisterBenchmark(
          name.c_str(), [s, type, peak](benchmark::State& state) { run_gemm(state, s, type, peak); })
          ->UseManualTime()
          ->MinTime(min_time_for_batch(kMinSeconds, batch_for(gemm_flops(s), kFlopsPerIteration)))
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace pipescope::benches
