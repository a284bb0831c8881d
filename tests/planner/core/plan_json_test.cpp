// The plan document: what the planner writes (plan_json.h) is what readers read through the schema
// (common/'s plan_schema.h), and the schema's reader refuses what is not a complete plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "pipescope/common/plan_schema.h"
#include "pipescope/planner/plan_json.h"
#include "planner_fixture.h"

namespace pipescope::planner {
namespace {

using ::testing::HasSubstr;
namespace schema = plan_schema;

PlanOutcome four_stage_plan() {
  ParallelConfig c;
  c.gpus = 8;
  c.pp = 4;
  c.global_batch = 16;
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", c);
  auto plan = make_plan(in);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return *plan;
}

std::string document_of(const PlanOutcome& plan, const nlohmann::ordered_json& arguments = nullptr) {
  const PlanInputs in = test::inputs("llama2-7b", "dgx-a100", plan.config);
  PlanDocumentText text;
  text.calibration_gpu = "a100-80gb";
  text.calibration_origin = "bundled";
  text.arguments = &arguments;
  text.notes = {"a note"};
  text.optimality = "proven";
  return plan_json(in.model, in.cluster, plan, text).dump(2);
}

TEST(PlanJson, TheWorkKindKeysAreThePlannersKindsOfWork) {
  for (size_t k = 0; k < kWorkKinds; ++k) {
    EXPECT_EQ(std::string(work_kind_name(static_cast<WorkKind>(k))) + "_s", schema::kWorkKindKeys[k]);
  }
}

TEST(PlanJson, WhatThePlannerWritesTheSchemaReadsBack) {
  const PlanOutcome plan = four_stage_plan();
  const std::string doc = document_of(plan, nlohmann::ordered_json{{"model", "llama2-7b"}});
  for (const auto& [side, report] : {std::pair{schema::kBaselineSide, &plan.uniform},
                                     std::pair{schema::kSuggestedSide, &plan.suggested}}) {
    SCOPED_TRACE(std::string(side));
    auto read = schema::read_plan_side(doc, "plan.json", side);
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->schema_version, schema::kPlanSchemaVersion);
    EXPECT_EQ(read->side, side);
    EXPECT_FALSE(read->baseline_is_given_split);
    EXPECT_DOUBLE_EQ(read->figures.iteration_s, report->iteration_s);
    EXPECT_DOUBLE_EQ(read->figures.bubble_fraction, report->bubble_fraction);
    ASSERT_EQ(read->figures.stages.size(), report->stages.size());
    for (size_t s = 0; s < report->stages.size(); ++s) {
      const schema::StageFigures& got = read->figures.stages[s];
      const StageReport& want = report->stages[s];
      EXPECT_EQ(got.layers, want.layers);
      EXPECT_DOUBLE_EQ(got.forward_s, want.forward_s);
      EXPECT_DOUBLE_EQ(got.backward_s, want.backward_s);
      EXPECT_DOUBLE_EQ(got.peak_memory_bytes, static_cast<double>(want.peak_memory_bytes));
      EXPECT_DOUBLE_EQ(got.allocated_bytes, static_cast<double>(want.allocated_bytes));
      EXPECT_DOUBLE_EQ(got.optimizer_s, want.optimizer_s);
      ASSERT_TRUE(got.forward_work && got.backward_work);
      for (size_t k = 0; k < kWorkKinds; ++k) {
        EXPECT_DOUBLE_EQ(got.forward_work->s[k], want.work.forward.s[k]);
        EXPECT_DOUBLE_EQ(got.backward_work->s[k], want.work.backward.s[k]);
      }
    }
    ASSERT_TRUE(read->config.has_value());
    EXPECT_EQ(read->config->pp, 4);
    EXPECT_EQ(read->config->dp, 2);
    EXPECT_EQ(read->config->micro_batches, plan.config.micro_batches());
    ASSERT_TRUE(read->memory_overheads.has_value());
    EXPECT_DOUBLE_EQ(read->memory_overheads->cuda_context_bytes,
                     static_cast<double>(plan.cuda_context_bytes));
    EXPECT_EQ(nlohmann::json::parse(read->arguments)["model"], "llama2-7b");
  }
}

// A plan document cut down to what every version has had, at `version`.
std::string minimal_document(int version, const std::string& stage_fields) {
  return R"({"schema_version": )" + std::to_string(version) +
         R"(, "suggested": {"iteration_s": 1.5, "bubble_fraction": 0.1, "stages": [{)" + stage_fields +
         "}]}}";
}

const char* const kStage =
    R"("layers": 4, "forward_s": 0.1, "backward_s": 0.2, "peak_memory_bytes": 5e9, "allocated_bytes": 4e9,
    "optimizer_s": 0.01)";

TEST(PlanSchema, AnEarlyVersionOneDocumentReadsWithoutWhatCameLater) {
  auto read = schema::read_plan_side(minimal_document(1, kStage), "old.json", schema::kSuggestedSide);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_FALSE(read->figures.stages[0].forward_work.has_value());
  EXPECT_FALSE(read->config.has_value());
  EXPECT_FALSE(read->memory_overheads.has_value());
  EXPECT_TRUE(read->arguments.empty());
  // Version 2's work by kind has no launch gap: it reads as 0.
  const std::string work =
      std::string(kStage) + R"(, "work": {"forward": {"gemm_s": 1, "attention_s": 2, "memory_bound_s": 3,
      "communication_s": 4}, "backward": {"gemm_s": 5, "attention_s": 6, "memory_bound_s": 7, "communication_s": 8}})";
  auto v2 = schema::read_plan_side(minimal_document(2, work), "v2.json", schema::kSuggestedSide);
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_EQ(v2->figures.stages[0].backward_work->of("memory_bound_s"), 7);
  EXPECT_EQ(v2->figures.stages[0].backward_work->of("launch_gap_s"), 0);
}

TEST(PlanSchema, AnotherVersionAMissingFieldOrAnotherKindOfDocumentIsRefusedNamingIt) {
  const auto error = [](const std::string& text, std::string_view side = schema::kSuggestedSide) {
    auto read = schema::read_plan_side(text, "p.json", side);
    return read.ok() ? std::string("read") : read.error().message;
  };
  EXPECT_THAT(error(minimal_document(4, kStage)),
              HasSubstr("p.json has plan schema_version 4; this pipescope reads versions 1 to 3"));
  EXPECT_THAT(error(minimal_document(0, kStage)), HasSubstr("has plan schema_version 0"));
  EXPECT_THAT(error(R"({"schema_version": "3", "suggested": {"stages": []}})"),
              HasSubstr("schema_version \"3\""));
  EXPECT_THAT(error(minimal_document(3, R"("forward_s": 0.1, "backward_s": 0.2)")),
              HasSubstr("plan 'p.json': field 'suggested.stages[0].layers' is missing"));
  std::string no_step = minimal_document(3, kStage);
  no_step.replace(no_step.find(R"("iteration_s": 1.5, )"), 19, "");
  EXPECT_THAT(error(no_step), HasSubstr("field 'suggested.iteration_s' is missing"));
  EXPECT_THAT(error(minimal_document(3, kStage), schema::kBaselineSide),
              HasSubstr("is not the output of 'pipescope plan --json' (no schema_version / uniform.stages)"));
  EXPECT_THAT(
      error(R"({"schema_version": 3, "suggested": {"iteration_s": 1, "bubble_fraction": 0, "stages": [3]}})"),
      HasSubstr("field 'suggested.stages[0]' must be an object, got 3"));
  std::string bad_config = minimal_document(3, kStage);
  bad_config.insert(1, R"("inputs": {"config": {"tp": "eight"}}, )");
  EXPECT_THAT(error(bad_config),
              HasSubstr("field 'inputs.config.tp' must be a positive integer, got \"eight\""));
  EXPECT_THAT(error("[1]"), HasSubstr("(expected 'pipescope plan --json' output)"));
}

}  // namespace
}  // namespace pipescope::planner
