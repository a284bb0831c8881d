// Which GEMM shapes the calibration suite measures: the ones the planner prices for the bundled
// models (planner/core/src/cost_model.cpp, Pricer::layer and Pricer::linear), and a coarse
// m, n, k grid around them. Pure logic: no CUDA, tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/models/model_desc.h"

namespace pipescope::benches {

// C = A B with A m x k and B k x n (docs/calibration-results.md).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  auto operator<=>(const GemmShape&) const = default;
};

struct ModelShapeOptions {
  std::vector<int64_t> tensor_parallel = {1, 2, 4, 8};
  std::vector<int64_t> micro_batch_sizes = {1, 2, 4};
  int64_t seq_length = 4096;
};

// The layer GEMMs of one model, exactly as the planner forms them for each TP degree and
// micro-batch size (no sequence parallelism, expert parallelism 1): per linear layer the forward
// (tokens, out, in), the input gradient (tokens, in, out) and the weight gradient (in, out,
// tokens). A TP degree the model cannot use (heads, kv heads or FFN not divisible) is skipped,
// as Megatron-LM refuses it. Sorted, without duplicates.
std::vector<GemmShape> model_gemm_shapes(const models::ModelDesc& model, const ModelShapeOptions& options);

// The union over several models, sorted, without duplicates.
std::vector<GemmShape> model_gemm_shapes(const std::vector<models::ModelDesc>& models,
                                         const ModelShapeOptions& options);

// Which pass of a linear layer a GEMM belongs to; each lays out its operands its own way
// (cublaslt_gemm.h).
enum class GemmPass { kForward, kInputGradient, kWeightGradient };

// The same shapes by pass, each list sorted, without duplicates.
struct PassGemmShapes {
  std::vector<GemmShape> forward, input_gradient, weight_gradient;
};
PassGemmShapes model_pass_gemm_shapes(const std::vector<models::ModelDesc>& models,
                                      const ModelShapeOptions& options);

// What the backward-layout benchmarks measure: every input- and weight-gradient GEMM of
// llama2-7b and llama3-70b at TP 1 and 8, micro-batch 1, in its own pass's layout, and each of
// those shapes in the forward's layout too (the pair gives the layout's factor). Sorted by shape,
// then pass; a shape that is both an input and a weight gradient appears in all three layouts once.
struct PassShape {
  GemmShape shape;
  GemmPass pass = GemmPass::kForward;
  auto operator<=>(const PassShape&) const = default;
};
struct SuiteLayoutShapes {
  std::vector<PassShape> shapes;
  std::string error;  // empty when the shapes are complete
};
SuiteLayoutShapes suite_layout_shapes();

// Attention's batched GEMMs as unfused attention (Megatron-LM's of 2021-2022, `torch.baddbmm` and
// `torch.bmm`) runs them: the scores Q K^T (s x s x d, in the forward's layout: K stored s x d) and
// P V (s x d x s, both operands as stored: the input gradient's layout), over `batch` matrices of
// b x heads. Each is timed three ways (docs/validation.md, V01): as one strided-batched kernel, as
// one of its matrices alone (what the planner prices batch times), and as one GEMM of all the
// batch's rows (batch x m, n, k: the same arithmetic and result size in one kernel).
enum class BatchedForm { kBatched, kOneMatrix, kAllRows };
struct BatchedGemm {
  int64_t batch = 1;  // matrices in the kernel (1 for kOneMatrix and kAllRows)
  GemmShape shape;    // each matrix's; kAllRows's m is the batch's rows
  GemmPass pass = GemmPass::kForward;
  BatchedForm form = BatchedForm::kBatched;
  auto operator<=>(const BatchedGemm&) const = default;
};
// Head dims 64, 96 and 128, sequences 2048 and 4096, 32 and 384 matrices (one sample of 32 heads;
// SC'21's 1.7B at micro-batch 16, 24 heads): each in the three forms, the single matrix once.
std::vector<BatchedGemm> suite_batched_attention_gemms();
const char* batched_form_name(BatchedForm form);  // batched, one_matrix, all_rows

// Every (m, n, k) with each of m, n and k taken from `sizes`.
std::vector<GemmShape> grid_shapes(const std::vector<int64_t>& sizes);

// What gpu_benchmark measures: the bundled models' shapes (all of them at TP 1, 2, 4, 8 and
// micro-batch 1, 2, 4; quick: llama2-7b and llama3-70b at TP 1 and 8, micro-batch 1) and the
// grid over 256 .. 16384 (quick: 512, 2048, 8192), together, sorted, without duplicates.
// Fails only when a bundled model cannot be loaded (a broken build).
struct SuiteShapes {
  std::vector<GemmShape> shapes;
  std::string error;  // empty when the shapes are complete
};
SuiteShapes suite_gemm_shapes(bool quick);

// FP8 GEMMs in cuBLASLt need every dimension a multiple of 16 (16-byte aligned e4m3 rows).
bool fp8_compatible(const GemmShape& shape);

}  // namespace pipescope::benches
