// `pipescope plan` as a user runs it: both splits side by side, the JSON document's fields, a plan
// that does not fit (still exit 0, overflow flagged, changes suggested), framework settings, and
// one clear line with exit code 2 for every kind of bad input.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_command.h"
#include "trace_test_support.h"

namespace pipescope::testing {
namespace {

using json = nlohmann::json;

std::vector<std::string> plan_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"plan"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// llama2-13b: 40 layers; 8 A100s as one 8-stage pipeline, 64 micro-batches of 8192 tokens.
const std::vector<std::string> kThirteenB = {
    "--model", "llama2-13b", "--gpu", "a100-80gb", "--gpus", "8",  "--tp",        "1",
    "--pp",    "8",          "--seq", "8192",      "--gbs",  "64", "--recompute", "auto"};
// llama2-70b on one 8-GPU pipeline without ZeRO or recompute: ~8.7B parameters a stage at 18
// bytes each is far above 80 GB.
const std::vector<std::string> kSeventyB = {"--model", "llama2-70b", "--gpu", "a100-80gb", "--gpus", "8",
                                            "--tp",    "1",          "--pp",  "8",         "--gbs",  "16"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

json plan_json(const std::vector<std::string>& args) {
  const CommandResult r = run_pipescope(plan_args(with(args, {"--json"})));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

void expect_bad_plan(const std::vector<std::string>& args, const std::string& mentions) {
  const CommandResult r = run_pipescope(plan_args(args));
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
}

TEST(PlanCommand, PrintsTheUniformAndTheSuggestedSplitSideBySide) {
  const CommandResult r = run_pipescope(plan_args(kThirteenB));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* piece : {"llama2-13b",
                            "a100-80gb",
                            "tp 1, pp 8",
                            "reserved",
                            "uniform",
                            "suggested",
                            "layers",
                            "in",
                            "flight",
                            "recompute",
                            "act",
                            "peak",
                            "fwd",
                            "bwd",
                            "idle",
                            "iteration time",
                            "pipeline bubble",
                            "tokens/s",
                            "TFLOP/s per GPU",
                            "MFU",
                            "suggested vs uniform",
                            "time limit: pipeline time within",
                            "(the busiest): GEMM ",
                            "memory-bound ",
                            "% over the fastest fitting split found ("}) {
    EXPECT_NE(r.out.find(piece), std::string::npos) << piece;
  }
  for (int stage = 0; stage < 8; ++stage) {
    EXPECT_NE(r.out.find("\n    " + std::to_string(stage) + " |"), std::string::npos) << stage;
  }
}

TEST(PlanCommand, JsonHasBothPlansWithTheirStages) {
  const json doc = plan_json(kThirteenB);
  EXPECT_EQ(doc["schema_version"], 3);
  EXPECT_EQ(doc["memory_figure"]["predicted"], "reserved");
  EXPECT_EQ(doc["inputs"]["model"]["name"], "llama2-13b");
  EXPECT_EQ(doc["inputs"]["config"]["pp"], 8);
  for (const char* name : {"uniform", "suggested"}) {
    const json& plan = doc[name];
    for (const char* field :
         {"iteration_s", "tflops_per_gpu", "mfu", "bubble_fraction", "peak_memory_bytes"}) {
      EXPECT_TRUE(plan.contains(field)) << name << " " << field;
    }
    ASSERT_EQ(plan["stages"].size(), 8u) << name;
    int layers = 0;
    for (size_t i = 0; i < plan["stages"].size(); ++i) {
      const json& stage = plan["stages"][i];
      EXPECT_EQ(stage["index"], static_cast<int>(i));
      for (const char* field : {"layers", "peak_memory_bytes", "activation_bytes", "forward_s", "backward_s",
                                "allocated_bytes", "reserved_bytes", "static_bytes", "parameters",
                                "in_flight", "recompute", "overflows", "idle_s"}) {
        EXPECT_TRUE(stage.contains(field)) << name << " stage " << i << " " << field;
      }
      EXPECT_EQ(stage["reserved_bytes"], stage["peak_memory_bytes"]);  // no step buffers in this recipe
      EXPECT_EQ(stage["step_bytes"], 0);
      EXPECT_LE(stage["allocated_bytes"].get<int64_t>(), stage["peak_memory_bytes"].get<int64_t>());
      EXPECT_GT(stage["forward_s"].get<double>(), 0);
      EXPECT_GT(stage["backward_s"].get<double>(), stage["forward_s"].get<double>());
      // The same seconds by kind of work: the kinds add up to the pass.
      for (const char* pass : {"forward", "backward"}) {
        double sum = 0;
        for (const char* kind : {"gemm_s", "attention_s", "memory_bound_s", "communication_s"})
          sum += stage["work"][pass][kind].get<double>();
        EXPECT_NEAR(sum, stage[std::string(pass) + "_s"].get<double>(), 1e-12) << name << " " << i << pass;
      }
      layers += stage["layers"].get<int>();
    }
    EXPECT_EQ(layers, 40) << name;  // llama2-13b's layers, every one on some stage
    const json& busiest = plan["stages"][plan["busiest_stage"].get<size_t>()];
    const double micro_batches = doc["inputs"]["config"]["micro_batches"].get<double>();
    const json& work = plan["busiest_stage_work_per_step"];
    EXPECT_NEAR(work["gemm_s"].get<double>(),
                micro_batches * (busiest["work"]["forward"]["gemm_s"].get<double>() +
                                 busiest["work"]["backward"]["gemm_s"].get<double>()),
                1e-9);
    EXPECT_EQ(work["optimizer_s"], busiest["optimizer_s"]);
  }
  EXPECT_LE(doc["suggested"]["peak_memory_bytes"].get<int64_t>(),
            doc["uniform"]["peak_memory_bytes"].get<int64_t>());
  EXPECT_FALSE(doc.contains("emit"));
}

// The peak's parts outside the tensors, from the profile: the CUDA context once, NCCL's buffers
// once per communicator a rank opens (one, one for tp, two for pp, one for dp: five here).
// Published MFUs come in two conventions; the plan gives both, and says which is which.
TEST(PlanCommand, MfuIsGivenWithTheFullAndTheCausallyHalvedAttention) {
  const CommandResult text = run_pipescope({"plan", "--model", "llama2-7b", "--gpu", "h100-80gb", "--gpus",
                                            "8", "--tp", "8", "--pp", "1", "--seq", "65536", "--gbs", "8"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("MFU, full s x s attention"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("MFU, causal halved"), std::string::npos) << text.out;
  const CommandResult r = run_pipescope({"plan", "--model", "llama2-7b", "--gpu", "h100-80gb", "--gpus", "8",
                                         "--tp", "8", "--pp", "1", "--seq", "65536", "--gbs", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out)["uniform"];
  // At 65,536 tokens the attention core is most of a 7B model's FLOPs: halving it takes off about
  // a third of the MFU (model FLOPs 6·N·s·B-ish plus 12·B·s²·l·h against half of the latter).
  const double ratio = plan["mfu_causal"].get<double>() / plan["mfu"].get<double>();
  EXPECT_GT(ratio, 0.6);
  EXPECT_LT(ratio, 0.75);
}

// A 4,096-token window at --seq 65536 takes most of the attention's time away: priced, and said.
TEST(PlanCommand, SlidingWindowAttentionIsPriced) {
  std::string pattern = ::testing::TempDir() + "pipescope-window-XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string dir = pattern;
  auto write_file = [](const std::string& path, const std::string& text) { std::ofstream(path) << text; };
  const std::string config = R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 65536,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "vocab_size": 32000, "use_flash_attn": true,
    "sliding_window": )";
  write_file(dir + "/windowed.json", config + "4096}");
  write_file(dir + "/full.json", config + "null}");
  auto plan = [&](const std::string& model) {
    const CommandResult r =
        run_pipescope({"plan", "--model", dir + "/" + model, "--gpu", "h100-80gb", "--gpus", "8", "--tp", "8",
                       "--pp", "1", "--seq", "65536", "--gbs", "8", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  };
  const json windowed = plan("windowed.json");
  const json full = plan("full.json");
  ASSERT_FALSE(windowed.is_null() || full.is_null());
  EXPECT_LT(windowed["uniform"]["iteration_s"].get<double>(),
            0.6 * full["uniform"]["iteration_s"].get<double>());
  const std::string notes = windowed["notes"].dump();
  EXPECT_NE(notes.find("sliding-window attention priced: 32 of 32 layers attend within 4096 tokens"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("use_flash_attn"), std::string::npos) << notes;
  std::filesystem::remove_all(dir);
}

TEST(PlanCommand, JsonStatesTheMemoryOverheadsEveryPeakHolds) {
  const json doc = plan_json({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "2",
                              "--pp", "4", "--mbs", "1", "--gbs", "16", "--recompute", "none"});
  std::ifstream in(std::string(PIPESCOPE_SOURCE_DIR) + "/calibrate/profiles/a100-80gb.json");
  const json profile = json::parse(in)["memory_overheads"];
  const json& overheads = doc["memory_overheads"];
  EXPECT_DOUBLE_EQ(overheads["cuda_context_bytes"].get<double>(),
                   std::round(profile["cuda_context_bytes"]["value"].get<double>()));
  EXPECT_DOUBLE_EQ(overheads["nccl_buffer_bytes"].get<double>(),
                   std::round(5 * profile["nccl_buffer_bytes_per_communicator"]["value"].get<double>()));
  const double fraction = overheads["allocator_reserve_fraction"].get<double>();
  EXPECT_DOUBLE_EQ(fraction, profile["allocator_reserve_fraction"]["value"].get<double>());
  // The text says the same, in GiB.
  const CommandResult text =
      run_pipescope(plan_args({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "2",
                               "--pp", "4", "--mbs", "1", "--gbs", "16", "--recompute", "none"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  char expected[160];
  std::snprintf(expected, sizeof expected,
                "allocated + %.0f %%, plus the CUDA context (%.1f GiB) and NCCL buffers (%.1f GiB)",
                fraction * 100, overheads["cuda_context_bytes"].get<double>() / (1 << 30),
                overheads["nccl_buffer_bytes"].get<double>() / (1 << 30));
  EXPECT_NE(text.out.find(expected), std::string::npos) << expected << "\n" << text.out;
  // No optimizer-step buffers in this recipe: every stage's peak is its tensors, the allocator's
  // reserve over them, and the overheads.
  for (const json& stage : doc["suggested"]["stages"]) {
    EXPECT_NEAR(stage["peak_memory_bytes"].get<double>(),
                stage["allocated_bytes"].get<double>() * (1 + fraction) +
                    overheads["cuda_context_bytes"].get<double>() +
                    overheads["nccl_buffer_bytes"].get<double>(),
                1.0);
  }
}

TEST(PlanCommand, JsonSaysWhatTheTimeLimitIsAndWhetherItIsProven) {
  const json doc = plan_json(kThirteenB);
  const json& o = doc["optimality"];
  EXPECT_TRUE(o["proven"].get<bool>());
  EXPECT_TRUE(o["time_limit_proven"].get<bool>());
  EXPECT_TRUE(o["meets_time_limit"].get<bool>());
  EXPECT_EQ(o["fastest_fitting_s"], o["fastest_fitting_lower_bound_s"]);
  EXPECT_LE(doc["suggested"]["pipeline_s"].get<double>(), o["time_limit_s"].get<double>());
}

// llama3-405b on 32 stages of H100s with 64 micro-batches: with a small budget the search cannot
// prove the fastest split fastest, so the limit is stated against the fastest it found, and both
// the JSON and the note say so, with the proven lower bound.
TEST(PlanCommand, AnUnprovenTimeLimitIsStatedAgainstTheFastestSplitFound) {
  const std::vector<std::string> args = {
      "--model", "llama3-405b", "--gpu",       "h100-80gb", "--gpus",        "256",
      "--tp",    "8",           "--pp",        "32",        "--gbs",         "64",
      "--seq",   "4096",        "--recompute", "auto",      "--search-time", "0.1"};
  const json doc = plan_json(args);
  const json& o = doc["optimality"];
  EXPECT_FALSE(o["proven"].get<bool>());
  EXPECT_FALSE(o["time_limit_proven"].get<bool>());
  EXPECT_TRUE(o["meets_time_limit"].get<bool>());
  const double fastest_s = o["fastest_fitting_s"].get<double>();
  const double limit_s = o["time_limit_s"].get<double>();
  EXPECT_LT(o["fastest_fitting_lower_bound_s"].get<double>(), fastest_s);
  EXPECT_GT(o["fastest_fitting_lower_bound_s"].get<double>(), 0.8 * fastest_s);
  EXPECT_NEAR(limit_s, 1.02 * fastest_s, 1e-12);
  EXPECT_LE(doc["suggested"]["pipeline_s"].get<double>(), limit_s);
  EXPECT_NE(o["text"].get<std::string>().find("could not prove fastest"), std::string::npos) << o["text"];

  const CommandResult r = run_pipescope(plan_args(args));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2% over the fastest fitting split found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s, not proven fastest)\n"), std::string::npos) << r.out;

  // --balance headroom holds the split to the uniform split's time too, and says so.
  const std::vector<std::string> headroom_args = with(args, {"--balance", "headroom"});
  const json headroom = plan_json(headroom_args);
  EXPECT_NEAR(headroom["optimality"]["time_limit_s"].get<double>(),
              std::max(1.02 * headroom["optimality"]["fastest_fitting_s"].get<double>(),
                       headroom["uniform"]["pipeline_s"].get<double>()),
              1e-12);
  EXPECT_EQ(headroom["inputs"]["config"]["balance"], "headroom");
  const CommandResult headroom_text = run_pipescope(plan_args(headroom_args));
  ASSERT_EQ(headroom_text.exit_code, 0) << headroom_text.err;
  EXPECT_NE(
      headroom_text.out.find("s, not proven fastest) and the uniform split's time (--balance headroom)"),
      std::string::npos)
      << headroom_text.out;

  // A budget spent before T_fit was bounded at all says so, rather than "faster than 0.000 s" (under
  // headroom, where a split faster than the uniform one may settle the limit without T_fit).
  std::vector<std::string> starved_args = args;
  starved_args.back() = "0.02";  // --search-time's value
  starved_args.insert(starved_args.end(), {"--balance", "headroom"});
  const json starved = plan_json(starved_args);
  const json& so = starved["optimality"];
  EXPECT_FALSE(so["time_limit_proven"].get<bool>());
  EXPECT_EQ(so["fastest_fitting_lower_bound_s"].get<double>(), 0);
  EXPECT_NE(so["text"].get<std::string>().find("the budget ran out before any bound on it"),
            std::string::npos)
      << so["text"];
  EXPECT_EQ(so["text"].get<std::string>().find("faster than 0.000 s"), std::string::npos) << so["text"];

  // --balance time has no time limit to state.
  const CommandResult fastest = run_pipescope(plan_args(with(args, {"--balance", "time"})));
  ASSERT_EQ(fastest.exit_code, 0) << fastest.err;
  EXPECT_EQ(fastest.out.find("time limit:"), std::string::npos) << fastest.out;
}

TEST(PlanCommand, APlanThatDoesNotFitIsStillAPlanWithOverflowsFlaggedAndFixesSuggested) {
  const CommandResult r = run_pipescope(plan_args(kSeventyB));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find('!'), std::string::npos);
  EXPECT_NE(r.out.find("does not fit"), std::string::npos);
  EXPECT_NE(r.out.find("What would make it fit"), std::string::npos);

  const json doc = plan_json(kSeventyB);
  EXPECT_FALSE(doc["fits"].get<bool>());
  EXPECT_FALSE(doc["suggested"]["fits"].get<bool>());
  bool overflow = false;
  for (const json& stage : doc["suggested"]["stages"]) overflow = overflow || stage["overflows"].get<bool>();
  EXPECT_TRUE(overflow);
  ASSERT_FALSE(doc["suggestions"].empty());
  std::vector<std::string> changes;
  for (const json& s : doc["suggestions"]) {
    EXPECT_TRUE(s.contains("change") && s.contains("fits") && s.contains("peak_memory_bytes"));
    changes.push_back(s["change"].get<std::string>());
  }
  // Each change is the flags that differ, as typed; one data-parallel rank: more stages need more GPUs.
  EXPECT_EQ(changes, (std::vector<std::string>{"--recompute auto", "--recompute full", "--pp 16 --gpus 16"}));
  EXPECT_NE(r.out.find("  --pp 16 --gpus 16 "), std::string::npos) << r.out;

  // Every kind of change, each named by its flag: tp 2 without sequence parallelism, two
  // sequences a micro-batch, 8 data-parallel ranks to shard over and to take stages from.
  const json wide = plan_json({"--model", "llama2-70b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "2",
                               "--pp", "1", "--mbs", "2", "--gbs", "32"});
  std::vector<std::string> all;
  for (const json& c : wide["suggestions"]) all.push_back(c["change"].get<std::string>());
  EXPECT_EQ(all, (std::vector<std::string>{"--recompute auto", "--recompute full", "--zero 1",
                                           "--sequence-parallel", "--mbs 1", "--pp 2"}));
}

TEST(PlanCommand, InterleavedAutoRecomputationSaysWhichModeEveryStageTakes) {
  const json doc =
      plan_json({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus",      "8",          "--tp",
                 "1",       "--pp",      "4",     "--vpp",     "2",           "--schedule", "interleaved",
                 "--gbs",   "16",        "--seq", "2048",      "--recompute", "auto"});
  std::string notes;
  for (const json& note : doc["notes"]) notes += note.get<std::string>() + "\n";
  EXPECT_NE(notes.find("interleaved schedule: --recompute auto takes one mode on every stage: none, the "
                       "fastest that fits\n"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("interleaved schedule: the suggested layout "), std::string::npos) << notes;
  EXPECT_NE(notes.find("(baseline: Megatron-LM's uniform chunks); one recompute mode on every stage"),
            std::string::npos)
      << notes;
}

// --pipeline-layout: Megatron-LM's layout string in. One chunk per stage is the split --split
// gives; with --vpp, the interleaved schedule's chunks, priced as laid out.
TEST(PlanCommand, APipelineLayoutIsPlannedAsMegatronRunsIt) {
  const std::vector<std::string> base = {"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus",
                                         "8",       "--tp",      "1",     "--pp",      "4",
                                         "--gbs",   "16",        "--seq", "2048"};
  const json by_split = plan_json(with(base, {"--split", "4,10,10,8"}));
  const json by_layout = plan_json(with(base, {"--pipeline-layout", "Et*4|(t*10|)*2t*8L"}));
  EXPECT_EQ(by_layout["uniform"]["iteration_s"], by_split["uniform"]["iteration_s"]);
  EXPECT_EQ(by_layout["uniform"]["layout"], "Et*4|t*10|t*10|t*8L");
  EXPECT_EQ(by_layout["inputs"]["arguments"]["pipeline_layout"], "Et*4|(t*10|)*2t*8L");
  for (size_t s = 0; s < 4; ++s)
    EXPECT_EQ(by_layout["uniform"]["stages"][s]["layers"], by_split["uniform"]["stages"][s]["layers"]);

  // LLaMA-3 405B as Meta trained it: 126 layers in 16 x 8 chunks, the embedding and the output
  // layer in chunks of their own.
  const std::vector<std::string> meta = {"--model",
                                         "llama3-405b",
                                         "--cluster",
                                         "dgx-h100",
                                         "--gpus",
                                         "8192",
                                         "--tp",
                                         "8",
                                         "--pp",
                                         "16",
                                         "--vpp",
                                         "8",
                                         "--zero",
                                         "2",
                                         "--seq",
                                         "8192",
                                         "--gbs",
                                         "2048",
                                         "--sequence-parallel",
                                         "--recompute",
                                         "full",
                                         "--pipeline-layout",
                                         "E|(t|)*126L"};
  const json doc = plan_json(meta);
  EXPECT_EQ(doc["suggested"]["layout"], "E|(t|)*126L");
  const json& stages = doc["suggested"]["stages"];
  ASSERT_EQ(stages.size(), 16u);
  for (const json& st : stages) EXPECT_EQ(st["chunk_layers"].size(), 8u);
  EXPECT_EQ(stages[0]["layers"], 7);
  EXPECT_EQ(stages[0]["chunk_layers"][0], 0);
  EXPECT_EQ(stages[15]["chunk_layers"][7], 0);
  EXPECT_TRUE(doc["suggested"]["fits"].get<bool>());
  const CommandResult text = run_pipescope(plan_args(with(meta, {"--emit", "megatron"})));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("layout (Megatron-LM --pipeline-model-parallel-layout): \"E|(t|)*126L\""),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  stage  15: 1 + 1 + 1 + 1 + 1 + 1 + 1 + 0 (and the output layer)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("--pipeline-model-parallel-layout \"E|(t|)*126L\""), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("--num-layers-per-virtual-pipeline-stage"), std::string::npos) << text.out;
}

TEST(PlanCommandBadInput, APipelineLayoutThatDoesNotFitTheRunIsRefusedNamingWhy) {
  const std::vector<std::string> base = {"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8",
                                         "--tp",    "1",         "--pp",  "4",         "--gbs",  "16"};
  expect_bad_plan(with(base, {"--split", "8,8,8,8", "--pipeline-layout", "Et*8|(t*8|)*2t*8L"}),
                  "give --split or --pipeline-layout, not both");
  expect_bad_plan(with(base, {"--pipeline-layout", "Et*8|(t*8|)*2m*8L"}),
                  "--pipeline-layout: 'm' at position");
  expect_bad_plan(with(base, {"--pipeline-layout", "E|(t*4|)*7t*4L"}),
                  "--pipeline-layout has 9 chunks; --pp 4 x --vpp 1 needs 4");
  expect_bad_plan(with(base, {"--pipeline-layout", "E|(t*5|)*6t*2L"}),
                  "--pipeline-layout has 8 chunks; --pp 4 x --vpp 1 needs 4; with --pp 4 that is --vpp 2");
  expect_bad_plan(with(base, {"--pipeline-layout", "Et*8|(t*8|)*2t*9L"}),
                  "--split adds up to 33 layers; the model has 32");
  expect_bad_plan(with(base, {"--vpp", "2", "--pipeline-layout", "E|(t*4|)*6t*5L"}),
                  "--pipeline-layout has 29 decoder layers (t); the model has 32");
}

// --vpp-group N: Megatron-LM's tunable interleaved schedule (N micro-batches through a chunk
// before the next; N = --pp by default). Stage 0 warms up 2 (p - 1) + (v - 1) N deep.
TEST(PlanCommand, MicrobatchGroupsWarmUpDeeperAndAreEmittedForMegatron) {
  const std::vector<std::string> base = {"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus",
                                         "8",       "--tp",      "1",     "--pp",      "4",
                                         "--vpp",   "2",         "--gbs", "16"};
  const json by_default = plan_json(base);
  const json grouped = plan_json(with(base, {"--vpp-group", "8"}));
  EXPECT_EQ(by_default["inputs"]["config"]["vpp_group"], 4);
  EXPECT_EQ(grouped["inputs"]["config"]["vpp_group"], 8);
  EXPECT_EQ(by_default["uniform"]["stages"][0]["in_flight"], 2 * 3 + 4 + 1);
  EXPECT_EQ(grouped["uniform"]["stages"][0]["in_flight"], 2 * 3 + 8 + 1);
  EXPECT_EQ(grouped["uniform"]["stages"][3]["in_flight"], 8 + 1);
  EXPECT_GT(grouped["uniform"]["stages"][0]["peak_memory_bytes"].get<int64_t>(),
            by_default["uniform"]["stages"][0]["peak_memory_bytes"].get<int64_t>());
  // The default and N = --pp are the same schedule.
  EXPECT_EQ(plan_json(with(base, {"--vpp-group", "4"}))["uniform"]["iteration_s"],
            by_default["uniform"]["iteration_s"]);

  const CommandResult text = run_pipescope(plan_args(with(base, {"--vpp-group", "8", "--emit", "megatron"})));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("pp 4 (vpp 2, groups of 8 micro-batches)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--microbatch-group-size-per-virtual-pipeline-stage 8"), std::string::npos)
      << text.out;
  const CommandResult plain = run_pipescope(plan_args(with(base, {"--emit", "megatron"})));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("--microbatch-group-size-per-virtual-pipeline-stage"), std::string::npos)
      << plain.out;

  // What Megatron-LM refuses, refused: N below --pp or above the 8 micro-batches, a last group
  // smaller than --pp, and a group without the interleaved schedule.
  expect_bad_plan(with(base, {"--vpp-group", "3"}),
                  "--vpp-group 3 must lie between --pp 4 and the 8 micro-batches");
  expect_bad_plan(with(base, {"--vpp-group", "9"}),
                  "--vpp-group 9 must lie between --pp 4 and the 8 micro-batches");
  expect_bad_plan(with(base, {"--vpp-group", "6"}),
                  "--vpp-group 6 leaves a last group of 2 of the 8 micro-batches");
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "4",
                   "--vpp-group", "4"},
                  "--vpp-group needs the interleaved schedule");
  // A group that is not a divisor of the micro-batches, with a last group of at least --pp, runs.
  EXPECT_EQ(plan_json({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "4",
                       "--vpp", "2", "--gbs", "24", "--vpp-group", "8"})["inputs"]["config"]["micro_batches"],
            12);
}

TEST(PlanCommand, EmitMegatronPrintsItsFlags) {
  const CommandResult r = run_pipescope(plan_args(with(kThirteenB, {"--emit", "megatron"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--tensor-model-parallel-size 1"), std::string::npos);
  EXPECT_NE(r.out.find("--pipeline-model-parallel-size 8"), std::string::npos);
  const json doc = plan_json(with(kThirteenB, {"--emit", "megatron"}));
  ASSERT_TRUE(doc["emit"].is_string());
  EXPECT_NE(doc["emit"].get<std::string>().find("--tensor-model-parallel-size"), std::string::npos);
}

TEST(PlanCommand, EmitDeepSpeedAndInternEvo) {
  const CommandResult ds = run_pipescope(plan_args(with(kThirteenB, {"--emit", "deepspeed"})));
  ASSERT_EQ(ds.exit_code, 0) << ds.err;
  EXPECT_NE(ds.out.find("\"gradient_accumulation_steps\": 64"), std::string::npos);
  const CommandResult ie = run_pipescope(plan_args(with(kThirteenB, {"--emit", "internevo"})));
  ASSERT_EQ(ie.exit_code, 0) << ie.err;
  EXPECT_NE(ie.out.find("pipeline=dict(size=8"), std::string::npos);
}

TEST(PlanCommand, InternEvoOptimizerRecipeHoldsLessAndSaysSo) {
  // 16 GPUs, dp 16 in zero1 groups of 8: InternEvo keeps 4 + 12/8 bytes per parameter where
  // Megatron-LM keeps 6 + 12/8, and the JSON names the recipe.
  const std::vector<std::string> base = {"--model",      "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16",
                                         "--tp",         "1",         "--pp",  "1",         "--zero", "1",
                                         "--zero-shard", "8",         "--json"};
  const CommandResult megatron = run_pipescope(plan_args(base));
  const CommandResult internevo = run_pipescope(plan_args(with(base, {"--optimizer", "internevo"})));
  ASSERT_EQ(megatron.exit_code, 0) << megatron.err;
  ASSERT_EQ(internevo.exit_code, 0) << internevo.err;
  const json m = json::parse(megatron.out), i = json::parse(internevo.out);
  EXPECT_EQ(i["inputs"]["config"]["optimizer"], "internevo");
  const double params = m["uniform"]["stages"][0]["parameters"].get<double>();
  const double saved = m["uniform"]["stages"][0]["allocated_bytes"].get<double>() -
                       i["uniform"]["stages"][0]["allocated_bytes"].get<double>();
  EXPECT_NEAR(saved, 2 * params, 1e-6 * params);
  bool noted = false;
  for (const json& note : i["notes"])
    noted = noted || note.get<std::string>().find("HybridZeroOptimizer") != std::string::npos;
  EXPECT_TRUE(noted) << i["notes"];
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "1", "--pp", "1",
                   "--zero", "2", "--optimizer", "internevo"},
                  "it has no ZeRO stage 2");
  expect_bad_plan(with(base, {"--optimizer", "lamb"}), "--optimizer");
}

TEST(PlanCommand, AFrameworkSetsTheRecipeAndWhenTheGradientSyncRuns) {
  // 64 A100s, dp 8: the sync's all-reduce either hides behind the last backward or follows it.
  const std::vector<std::string> base = {"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "64",
                                         "--tp",    "2",         "--pp",  "4",         "--gbs",  "256"};
  const json core = plan_json(with(base, {"--framework", "megatron-core"}));
  const json old = plan_json(with(base, {"--framework", "megatron-2022"}));
  EXPECT_EQ(core["inputs"]["config"]["framework"], "megatron-core");
  EXPECT_EQ(core["inputs"]["config"]["optimizer"], "megatron");
  EXPECT_EQ(core["inputs"]["config"]["grad_sync_overlaps_backward"], true);
  EXPECT_EQ(old["inputs"]["config"]["grad_sync_overlaps_backward"], false);
  const auto exposed = [](const json& plan) {
    double most = 0;
    for (const json& stage : plan["uniform"]["stages"])
      most = std::max(most, stage["dp_sync_exposed_s"].get<double>());
    return most;
  };
  EXPECT_GT(exposed(old), 0);
  EXPECT_LT(exposed(core), exposed(old));
  EXPECT_GT(old["uniform"]["iteration_s"].get<double>(), core["uniform"]["iteration_s"].get<double>());
  // --grad-sync overrides the framework's habit: the sync is then exposed as megatron-core's is
  // (their pipelines' transfers differ: docs/planner.md "Frameworks"). The generic default
  // overlaps, as before, but runs the tensor-parallel backward's collectives in turn with its
  // GEMMs, as Megatron-LM of SC'21 does.
  const json torch_ddp =
      plan_json(with(base, {"--framework", "megatron-2022", "--grad-sync", "during-backward"}));
  EXPECT_DOUBLE_EQ(exposed(torch_ddp), exposed(core));
  const json generic = plan_json(base);
  EXPECT_EQ(generic["inputs"]["config"]["grad_sync_overlaps_backward"], true);
  EXPECT_GT(generic["uniform"]["iteration_s"].get<double>(), core["uniform"]["iteration_s"].get<double>());
  const json sc21 = plan_json(with(base, {"--framework", "megatron-2021", "--grad-sync", "during-backward"}));
  EXPECT_EQ(sc21["inputs"]["config"]["framework"], "megatron-2021");
  EXPECT_DOUBLE_EQ(exposed(sc21), exposed(generic));
  EXPECT_DOUBLE_EQ(sc21["uniform"]["stages"][1]["backward_s"].get<double>(),
                   generic["uniform"]["stages"][1]["backward_s"].get<double>());

  // The recipe comes with the framework; an explicit --optimizer wins.
  const json internlm = plan_json(with(base, {"--framework", "internlm-2023"}));
  EXPECT_EQ(internlm["inputs"]["config"]["optimizer"], "internevo");
  EXPECT_EQ(internlm["inputs"]["config"]["grad_sync_overlaps_backward"], false);
  EXPECT_EQ(
      plan_json(with(base, {"--framework", "internevo"}))["inputs"]["config"]["grad_sync_overlaps_backward"],
      true);
  EXPECT_EQ(plan_json(with(base, {"--framework", "deepspeed"}))["inputs"]["config"]["optimizer"],
            "deepspeed-bf16");
  EXPECT_EQ(plan_json(with(base, {"--framework", "deepspeed", "--optimizer",
                                  "megatron"}))["inputs"]["config"]["optimizer"],
            "megatron");
  const CommandResult text = run_pipescope(plan_args(with(base, {"--framework", "megatron-2022"})));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("framework megatron-2022"), std::string::npos) << text.out;

  expect_bad_plan(with(base, {"--framework", "megatron"}), "--framework");
  expect_bad_plan(with(base, {"--grad-sync", "never"}), "--grad-sync");
}

TEST(PlanCommand, PyTorchEagerPricesItsUnfusedKernelsAndSaysSo) {
  // One A100 (whose profile measured no launch gap), the example's 7B-layer model: GEMMs and
  // attention as for any framework, the memory-bound work (and the step) as eager PyTorch's own
  // kernels, the sync after the backward.
  const std::string model = std::string(PIPESCOPE_SOURCE_DIR) + "/examples/llama2-7b-8-layers.json";
  const std::vector<std::string> base = {"--model", model,  "--gpu", "a100-80gb", "--gpus", "1",     "--tp",
                                         "1",       "--pp", "1",     "--gbs",     "4",      "--seq", "4096"};
  const json fused = plan_json(base);
  const json eager = plan_json(with(base, {"--framework", "pytorch-eager"}));
  EXPECT_EQ(eager["inputs"]["config"]["framework"], "pytorch-eager");
  EXPECT_EQ(eager["inputs"]["config"]["optimizer"], "megatron");
  EXPECT_EQ(eager["inputs"]["config"]["grad_sync_overlaps_backward"], false);
  const json& f = fused["uniform"]["busiest_stage_work_per_step"];
  const json& e = eager["uniform"]["busiest_stage_work_per_step"];
  EXPECT_DOUBLE_EQ(e["gemm_s"].get<double>(), f["gemm_s"].get<double>());
  EXPECT_DOUBLE_EQ(e["attention_s"].get<double>(), f["attention_s"].get<double>());
  EXPECT_GT(e["memory_bound_s"].get<double>(), 3 * f["memory_bound_s"].get<double>());
  // The example's step (Adam, the bf16 copy, the zeroing) against Megatron-LM's, which also takes
  // the gradient norm.
  EXPECT_NEAR(e["optimizer_s"].get<double>() / f["optimizer_s"].get<double>(), 38.0 / 42.0, 1e-9);
  bool noted = false;
  for (const json& note : eager["notes"])
    noted = noted || note.get<std::string>().rfind("pytorch-eager:", 0) == 0;
  EXPECT_TRUE(noted) << eager["notes"];
  EXPECT_EQ(e["launch_gap_s"].get<double>(), 0);
  // On an H100, whose bundled profile measured the GPU's gap between kernels, each kernel costs it.
  std::vector<std::string> h100 = base;
  h100[3] = "h100-80gb";
  const json gapped = plan_json(with(h100, {"--framework", "pytorch-eager"}));
  EXPECT_GT(gapped["uniform"]["busiest_stage_work_per_step"]["launch_gap_s"].get<double>(), 1e-3);
  EXPECT_EQ(plan_json(h100)["uniform"]["busiest_stage_work_per_step"]["launch_gap_s"].get<double>(), 0);
  const CommandResult text = run_pipescope(plan_args(with(h100, {"--framework", "pytorch-eager"})));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("launch gaps "), std::string::npos) << text.out;

  const CommandResult moe =
      run_pipescope(plan_args({"--model", "mixtral-8x7b", "--gpu", "h100-80gb", "--gpus", "8", "--tp", "8",
                               "--pp", "1", "--framework", "pytorch-eager"}));
  EXPECT_EQ(moe.exit_code, 2);
  EXPECT_NE(moe.err.find("--framework pytorch-eager prices a dense decoder"), std::string::npos) << moe.err;
  EXPECT_EQ(std::count(moe.err.begin(), moe.err.end(), '\n'), 1) << moe.err;
}

TEST(PlanCommand, DeepSpeedsStepBuffersAreHeldAfterTheStepAndShown) {
  // BF16_Optimizer's all-reduce works on a bf16 copy of the gradients, 2 bytes per parameter,
  // after the activations are freed: the JSON gives it as step_bytes and adds it to what the
  // allocator holds (reserved_bytes), not to what runs out (peak_memory_bytes); the table says so.
  const std::vector<std::string> args = {"--model", "llama2-7b", "--gpu",       "a100-80gb",     "--gpus",
                                         "16",      "--tp",      "2",           "--pp",          "2",
                                         "--zero",  "1",         "--optimizer", "deepspeed-bf16"};
  const json doc = plan_json(args);
  for (const json& stage : doc["uniform"]["stages"]) {
    const int64_t step = stage["step_bytes"].get<int64_t>();
    EXPECT_EQ(step, 2 * stage["parameters"].get<int64_t>());
    EXPECT_EQ(stage["reserved_bytes"].get<int64_t>(), stage["peak_memory_bytes"].get<int64_t>() + step);
  }
  EXPECT_TRUE(doc["memory_figure"].contains("reserved_bytes"));
  const CommandResult text = run_pipescope(plan_args(args));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("held after step"), std::string::npos) << text.out;
  EXPECT_EQ(run_pipescope(plan_args(kThirteenB)).out.find("held after step"), std::string::npos);
}

TEST(PlanCommand, SequenceParallelNeedsTensorParallel) {
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "2",
                   "--sequence-parallel"},
                  "--sequence-parallel");
  const CommandResult r = run_pipescope(plan_args({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus",
                                                   "8", "--tp", "2", "--pp", "2", "--sequence-parallel"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sequence parallel"), std::string::npos);
}

TEST(PlanCommandBadInput, TensorParallelNotDividingTheHeads) {
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "6", "--tp", "3", "--pp", "1"},
                  "tensor parallel size (3)");
}

TEST(PlanCommandBadInput, MorePipelineStagesThanLayers) {
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "100", "--tp", "1", "--pp", "100"},
                  "--pp 100");
}

TEST(PlanCommandBadInput, GlobalBatchNotDivisible) {
  expect_bad_plan(
      {"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "4", "--gbs", "3"},
      "--gbs 3");
}

TEST(PlanCommandBadInput, UnknownModelAndGpu) {
  expect_bad_plan({"--model", "no-such-model", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "1"},
                  "no-such-model");
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "b300", "--gpus", "8", "--tp", "1", "--pp", "1"}, "b300");
  expect_bad_plan({"--model", "llama2-7b", "--cluster", "nowhere", "--gpus", "8", "--tp", "1", "--pp", "1"},
                  "nowhere");
}

TEST(PlanCommandBadInput, MalformedConfigJson) {
  const trace::test::ScratchDir dir;
  const std::filesystem::path file = dir.file("config.json");
  std::ofstream(file) << "{\"model_type\": \"llama\", \"hidden_size\": 4096,";  // cut off
  expect_bad_plan({"--model", file.string(), "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "1"},
                  "config.json");
}

TEST(PlanCommandBadInput, AbsurdSizesAreRefusedInOneLine) {
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "8", "--pp", "1",
                   "--seq", "2000000000"},
                  "--seq 2000000000");
  const trace::test::ScratchDir dir;
  const std::filesystem::path file = dir.file("config.json");
  std::ofstream(file) << R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 2000000000, "intermediate_size": 11008, "vocab_size": 32000})";
  expect_bad_plan({"--model", file.string(), "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "1"},
                  "'num_layers' is 2000000000");
}

TEST(PlanCommandBadInput, NotANumberIsRefusedWhereANumberIsAsked) {
  for (const char* value : {"nan", "inf", "-1"}) {
    expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "1",
                     "--search-time", value},
                    "--search-time");
    expect_bad_plan({"--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--tp", "1", "--pp", "1",
                     "--inter-node-gbps", value},
                    "--inter-node-gbps");
  }
}

TEST(PlanCommandBadInput, GpuWithoutABundledProfileNamesCalibration) {
  expect_bad_plan({"--model", "llama2-7b", "--gpu", "b200-180gb", "--gpus", "8", "--tp", "1", "--pp", "1"},
                  "--calibration");
}

TEST(PlanCommand, TheStudys123BWorkloadShowsV1sImbalanceAndPlansV2sShardedMemory) {
  // examples/internevo-123b.md: InternEvo v1 (tp 8, pp 4, 1F1B) and v2 (zero1.fsdp in groups of 64,
  // full recomputation) on 2,048 A100s of Seren.
  const std::vector<std::string> common = {"--model", "internlm-123b", "--cluster",   "seren",
                                           "--gpus",  "2048",          "--seq",       "2048",
                                           "--gbs",   "2048",          "--framework", "internevo"};
  const json v1 = plan_json(with(common, {"--tp", "8", "--pp", "4", "--mbs", "2", "--zero", "1"}));
  const json& uniform = v1["uniform"]["stages"];
  ASSERT_EQ(uniform.size(), 4u);
  // 1F1B: the first stage holds 4 micro-batches, the last 1; its peak is the job's, near twice the last's.
  for (size_t s = 1; s < 4; ++s) {
    EXPECT_LT(uniform[s]["peak_memory_bytes"].get<double>(),
              uniform[s - 1]["peak_memory_bytes"].get<double>());
  }
  EXPECT_GT(uniform[0]["peak_memory_bytes"].get<double>(),
            1.8 * uniform[3]["peak_memory_bytes"].get<double>());
  // The suggested split moves layers off the first stage and lowers the job's peak.
  EXPECT_LT(v1["suggested"]["stages"][0]["layers"].get<int>(), 24);
  EXPECT_LT(v1["suggested"]["peak_memory_bytes"].get<double>(),
            v1["uniform"]["peak_memory_bytes"].get<double>());
  EXPECT_TRUE(v1["suggested"]["fits"].get<bool>());

  const json v2 = plan_json(with(common, {"--tp", "1", "--pp", "1", "--mbs", "1", "--zero", "3",
                                          "--zero-shard", "64", "--recompute", "full"}));
  const json& stage = v2["suggested"]["stages"][0];
  EXPECT_EQ(stage["parameters"].get<int64_t>(), 123'166'402'560);
  // 16 bytes per parameter over the 64 ranks of a zero1 group.
  EXPECT_NEAR(stage["static_bytes"].get<double>(), 16.0 * 123'166'402'560 / 64, 1e3);
  EXPECT_TRUE(v2["suggested"]["fits"].get<bool>());
  EXPECT_EQ(v2["inputs"]["config"]["zero_stage"], 3);
  EXPECT_EQ(v2["inputs"]["config"]["grad_sync_overlaps_backward"], false);
  // zero1.fsdp refuses a pipeline: so does the plan.
  expect_bad_plan(with(common, {"--tp", "8", "--pp", "4", "--zero", "3"}),
                  "zero1.fsdp, which refuses pipeline parallelism");
}

}  // namespace
}  // namespace pipescope::testing
