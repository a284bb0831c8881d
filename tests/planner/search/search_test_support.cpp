#include "search_test_support.h"

#include <gtest/gtest.h>

#include "pipescope/models/model_catalog.h"

namespace pipescope::planner::test {

SearchRequest request(const std::string& model, const std::string& cluster, int64_t gpus,
                      int64_t global_batch, int64_t seq_length) {
  SearchRequest r;
  auto m = models::load_model(model);
  auto c = load_cluster(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  if (!m.ok() || !c.ok()) return r;
  auto profile = profile_for_gpu(c->gpu);
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  if (!profile.ok()) return r;
  r.model = *m;
  r.cluster = *c;
  r.profile = *profile;
  r.gpus = gpus;
  r.global_batch = global_batch;
  r.seq_length = seq_length;
  return r;
}

models::ModelDesc tiny_model() {
  models::ModelDesc m;
  m.name = "tiny";
  m.architecture = "llama";
  m.source = "test";
  m.vocab_size = 1000;
  m.hidden_size = 384;
  m.num_layers = 4;
  m.num_attention_heads = 6;
  m.num_kv_heads = 6;
  m.head_dim = 64;
  m.ffn_hidden_size = 1536;
  m.max_position_embeddings = 512;
  return m;
}

}  // namespace pipescope::planner::test
