#include "gemm_shapes.h"

#include <algorithm>
#include <set>
#include <utility>

#include "pipescope/models/cost_options.h"
#include "pipescope/models/model_catalog.h"

namespace pipescope::benches {
namespace {

struct PassSets {
  std::set<GemmShape> forward, input_gradient, weight_gradient;
};

// Pricer::linear: y = x W for `tokens` rows, W in x out.
void add_linear(PassSets& into, int64_t tokens, int64_t out, int64_t in) {
  if (tokens < 1 || out < 1 || in < 1) return;
  into.forward.insert({tokens, out, in});
  into.input_gradient.insert({tokens, in, out});
  into.weight_gradient.insert({in, out, tokens});
}

// Pricer::layer for one TP degree and micro-batch size.
void add_layer(PassSets& into, const models::ModelDesc& m, int64_t t, int64_t tokens) {
  const int64_t q_width = m.num_attention_heads * m.head_dim / t;
  const int64_t kv_width = m.num_kv_heads * m.head_dim / t;
  const int64_t up_matrices = m.mlp == models::MlpKind::kSwiglu ? 2 : 1;
  add_linear(into, tokens, q_width + 2 * kv_width, m.hidden_size);  // Q, K, V
  add_linear(into, tokens, m.hidden_size, q_width);                 // output projection
  const bool has_dense = !m.is_moe() || (m.moe.layer_frequency > 1 && m.num_layers > 1);
  if (has_dense) {
    const int64_t f = m.ffn_hidden_size / t;
    add_linear(into, tokens, up_matrices * f, m.hidden_size);  // up (and gate)
    add_linear(into, tokens, m.hidden_size, f);                // down
  }
  if (m.is_moe()) {
    const models::MoeDesc& e = m.moe;
    const int64_t f = e.expert_ffn_hidden_size / t;
    // Expert parallelism 1: all experts local, balanced routing gives each tokens * top_k / E rows.
    const int64_t rows = tokens * e.top_k / e.num_experts;
    add_linear(into, rows, up_matrices * f, m.hidden_size);
    add_linear(into, rows, m.hidden_size, f);
    add_linear(into, tokens, e.num_experts, m.hidden_size);  // router
    if (e.num_shared_experts > 0) {
      const int64_t fs = e.num_shared_experts * e.shared_expert_ffn_hidden_size / t;
      add_linear(into, tokens, up_matrices * fs, m.hidden_size);
      add_linear(into, tokens, m.hidden_size, fs);
    }
  }
}

}  // namespace

std::vector<GemmShape> model_gemm_shapes(const models::ModelDesc& model, const ModelShapeOptions& options) {
  return model_gemm_shapes(std::vector<models::ModelDesc>{model}, options);
}

PassGemmShapes model_pass_gemm_shapes(const std::vector<models::ModelDesc>& models,
                                      const ModelShapeOptions& options) {
  PassSets sets;
  for (const models::ModelDesc& model : models) {
    for (int64_t t : options.tensor_parallel) {
      for (int64_t mbs : options.micro_batch_sizes) {
        models::CostOptions o;
        o.micro_batch_size = mbs;
        o.seq_length = options.seq_length;
        o.tensor_parallel = t;
        if (!models::check_cost_options(model, o).ok()) continue;
        add_layer(sets, model, t, mbs * options.seq_length);
      }
    }
  }
  return {{sets.forward.begin(), sets.forward.end()},
          {sets.input_gradient.begin(), sets.input_gradient.end()},
          {sets.weight_gradient.begin(), sets.weight_gradient.end()}};
}

std::vector<GemmShape> model_gemm_shapes(const std::vector<models::ModelDesc>& models,
                                         const ModelShapeOptions& options) {
  const PassGemmShapes by_pass = model_pass_gemm_shapes(models, options);
  std::set<GemmShape> shapes;
  for (const auto* list : {&by_pass.forward, &by_pass.input_gradient, &by_pass.weight_gradient})
    shapes.insert(list->begin(), list->end());
  return {shapes.begin(), shapes.end()};
}

SuiteLayoutShapes suite_layout_shapes() {
  SuiteLayoutShapes out;
  std::vector<models::ModelDesc> descs;
  for (const char* name : {"llama2-7b", "llama3-70b"}) {
    auto model = models::load_bundled_model(name);
    if (!model.ok()) {
      out.error = model.error().message;
      return out;
    }
    descs.push_back(std::move(*model));
  }
  ModelShapeOptions options;
  options.tensor_parallel = {1, 8};
  options.micro_batch_sizes = {1};
  const PassGemmShapes by_pass = model_pass_gemm_shapes(descs, options);
  std::set<PassShape> shapes;
  for (const GemmShape& s : by_pass.input_gradient) {
    shapes.insert({s, GemmPass::kInputGradient});
    shapes.insert({s, GemmPass::kForward});
  }
  for (const GemmShape& s : by_pass.weight_gradient) {
    shapes.insert({s, GemmPass::kWeightGradient});
    shapes.insert({s, GemmPass::kForward});
  }
  out.shapes.assign(shapes.begin(), shapes.end());
  return out;
}

std::vector<BatchedGemm> suite_batched_attention_gemms() {
  std::set<BatchedGemm> out;
  for (const int64_t d : {64, 96, 128}) {
    for (const int64_t s : {2048, 4096}) {
      const GemmShape scores{s, s, d}, context{s, d, s};
      for (const auto& [shape, pass] :
           {std::pair{scores, GemmPass::kForward}, {context, GemmPass::kInputGradient}}) {
        out.insert({1, shape, pass, BatchedForm::kOneMatrix});
        for (const int64_t batch : {32, 384}) {
          out.insert({batch, shape, pass, BatchedForm::kBatched});
          out.insert({1, GemmShape{batch * shape.m, shape.n, shape.k}, pass, BatchedForm::kAllRows});
        }
      }
    }
  }
  return {out.begin(), out.end()};
}

const char* batched_form_name(BatchedForm form) {
  switch (form) {
    case BatchedForm::kBatched: return "batched";
    case BatchedForm::kOneMatrix: return "one_matrix";
    case BatchedForm::kAllRows: return "all_rows";
  }
  return "batched";
}

std::vector<GemmShape> grid_shapes(const std::vector<int64_t>& sizes) {
  std::set<GemmShape> shapes;
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) shapes.insert({m, n, k});
    }
  }
  return {shapes.begin(), shapes.end()};
}

SuiteShapes suite_gemm_shapes(bool quick) {
  SuiteShapes out;
  ModelShapeOptions options;
  std::vector<std::string> names = models::list_bundled_models();
  std::vector<int64_t> grid = {256, 512, 1024, 2048, 4096, 8192, 16384};
  if (quick) {
    names = {"llama2-7b", "llama3-70b"};
    options.tensor_parallel = {1, 8};
    options.micro_batch_sizes = {1};
    grid = {512, 2048, 8192};
  }
  std::vector<models::ModelDesc> descs;
  for (const std::string& name : names) {
    auto model = models::load_bundled_model(name);
    if (!model.ok()) {
      out.error = model.error().message;
      return out;
    }
    descs.push_back(std::move(*model));
  }
  std::set<GemmShape> shapes;
  for (const GemmShape& s : model_gemm_shapes(descs, options)) shapes.insert(s);
  for (const GemmShape& s : grid_shapes(grid)) shapes.insert(s);
  out.shapes.assign(shapes.begin(), shapes.end());
  return out;
}

bool fp8_compatible(const GemmShape& shape) {
  return shape.m % 16 == 0 && shape.n % 16 == 0 && shape.k % 16 == 0;
}

}  // namespace pipescope::benches
