#include "planner_fixture.h"

#include <gtest/gtest.h>

#include <utility>

#include "pipescope/models/model_catalog.h"

namespace pipescope::planner::test {

PlanInputs inputs(const std::string& model_name, const std::string& cluster_name, ParallelConfig config) {
  PlanInputs in;
  auto model = models::load_model(model_name);
  auto cluster = load_cluster(cluster_name);
  EXPECT_TRUE(model.ok() && cluster.ok());
  if (!model.ok() || !cluster.ok()) return in;
  auto profile = profile_for_gpu(cluster->gpu);
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  auto resolved = resolve_config(*model, std::move(config));
  EXPECT_TRUE(resolved.ok()) << resolved.error().message;
  if (!profile.ok() || !resolved.ok()) return in;
  return {*model, *cluster, *profile, *resolved};
}

ParallelConfig data_parallel_8(int zero_stage, int64_t shard) {
  ParallelConfig c;
  c.gpus = 8;
  c.zero_stage = zero_stage;
  c.zero_shard = shard;
  return c;
}

eager::LayerShape small_layer_shape() {
  eager::LayerShape s;
  s.tokens = 1000;
  s.norm_tokens = 1000;
  s.hidden = 100;
  s.q_width = 100;
  s.kv_width = 100;
  s.ffn_width = 300;
  return s;
}

}  // namespace pipescope::planner::test
