#include "planner_fixture.h"

#include <gtest/gtest.h>

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
  auto resolved = resolve_config(*model, config);
  EXPECT_TRUE(resolved.ok()) << resolved.error().message;
  if (!profile.ok() || !resolved.ok()) return in;
  return {*model, *cluster, *profile, *resolved};
}

}  // namespace pipescope::planner::test
