// `pipescope calibrate fit|show|run` as users run them: a profile from suite results that the
// planner then uses, a run's traces pulling the prediction toward the measurement, the summary
// and its plots, and bad input (one line, exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "h200_run.h"
#include "pipescope/planner/calibration_profile.h"
#include "report_test_support.h"
#include "run_command.h"
#include "synthetic_results.h"
#include "synthetic_run.h"

namespace pipescope::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Dir {
 public:
  Dir() {
    path_ = fs::path(::testing::TempDir()) /
            ("pipescope-calibrate-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const std::vector<std::string> kPlan = {"plan", "--model", "llama2-7b", "--gpu", "h100-80gb", "--gpus",
                                        "16",   "--tp",    "2",         "--pp",  "4",         "--mbs",
                                        "1",    "--gbs",   "16",        "--seq", "4096"};

TEST(CalibrateFit, WritesAProfileThePlannerUses) {
  Dir dir;
  write_file(dir.file("gpu.json"), calibrate::testing::synthetic_results_json());
  const CommandResult fit =
      run_pipescope({"calibrate", "fit", dir.file("gpu.json"), "-o", dir.file("p.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("gemm bf16"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("all_reduce intra_node 8 ranks"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("kept from the bundled h100-80gb profile (not measured): "), std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("wrote " + dir.file("p.json")), std::string::npos) << fit.out;
  const json profile = json::parse(slurp(dir.file("p.json")));
  EXPECT_EQ(profile["schema_version"], 3);
  EXPECT_EQ(profile["gpu"], "h100-80gb");
  EXPECT_EQ(profile["provenance"]["gpu_device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_NE(profile["provenance"]["command"].get<std::string>().find("calibrate fit"), std::string::npos);

  std::vector<std::string> plan = kPlan;
  plan.insert(plan.end(), {"--calibration", dir.file("p.json"), "--json"});
  const CommandResult planned = run_pipescope(plan);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(json::parse(planned.out)["inputs"]["calibration"]["origin"], dir.file("p.json"));

  // --json: the same fit as one document, nothing else on stdout.
  const CommandResult as_json =
      run_pipescope({"calibrate", "fit", dir.file("gpu.json"), "--json", "-o", dir.file("q.json")});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json doc = json::parse(as_json.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["output"], dir.file("q.json"));
  EXPECT_EQ(doc["fit"]["gpu"], "h100-80gb");
  EXPECT_EQ(doc["fit"]["base"]["kind"], "same_gpu");
  EXPECT_TRUE(doc["refinement"].is_null());
  bool all_reduce = false;
  for (const json& section : doc["fit"]["sections"]) {
    if (section["what"] != "all_reduce intra_node 8 ranks") continue;
    all_reduce = true;
    EXPECT_EQ(section["points"], 8);  // 64 KiB to 1 GiB in steps of 4x
    EXPECT_TRUE(section["flagged"].empty());
  }
  EXPECT_TRUE(all_reduce) << as_json.out;
  const auto& kept = doc["fit"]["kept_from_base"];
  EXPECT_NE(std::find(kept.begin(), kept.end(), "memory_overheads.allocator_reserve_fraction"), kept.end());
  EXPECT_EQ(json::parse(slurp(dir.file("q.json")))["gpu"], "h100-80gb");
}

TEST(CalibrateFit, TheH100sLaunchGapIsInItsProfileAndShown) {
  // docs/gpu-runs/2026-11-27-h100-b: launch/gap timed an empty kernel 1,000 at a time from a CUDA
  // graph at 0.98 us a kernel; the fit puts it in the profile, refitted here as there.
  const std::string run = std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/2026-11-27-h100-b/";
  Dir dir;
  const CommandResult fit =
      run_pipescope({"calibrate", "fit", run + "sustained.json", run + "losses.json", "--base",
                     std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/2026-11-27-h100/profile.json", "-o",
                     dir.file("p.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_EQ(fit.out.find("no place for it"), std::string::npos) << fit.out;
  const json fitted = json::parse(slurp(dir.file("p.json")));
  EXPECT_EQ(fitted["losses"], json::parse(slurp(run + "profile.json"))["losses"]);
  EXPECT_NEAR(fitted["losses"]["launch_gap_s"]["value"].get<double>(), 0.98e-6, 0.005e-6);

  const CommandResult show = run_pipescope({"calibrate", "show", dir.file("p.json")});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("launch gaps: 0.98 us of GPU time a kernel launched"), std::string::npos)
      << show.out;
  const CommandResult shown = run_pipescope({"calibrate", "show", dir.file("p.json"), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NEAR(json::parse(shown.out)["losses"]["launch_gap_s"].get<double>(), 0.98e-6, 0.005e-6);
  // The bundled H100 profile carries the same measurement.
  const CommandResult bundled = run_pipescope({"calibrate", "show", "h100-80gb"});
  ASSERT_EQ(bundled.exit_code, 0) << bundled.err;
  EXPECT_NE(bundled.out.find("launch gaps: 0.98 us"), std::string::npos) << bundled.out;
}

TEST(CalibrateFit, TheH200sPyTorchKernelsAreInItsProfileAndShown) {
  // docs/gpu-runs/2026-11-28-h200: launch/gap (0.511 us from a graph) and eager_elementwise.py
  // (seven PyTorch ops at seven sizes), fitted over the bundled H200 profile as there.
  const std::string run = std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/2026-11-28-h200/";
  Dir dir;
  const CommandResult fit = run_pipescope({"calibrate", "fit", run + "launch.json", run + "eager.json",
                                           "--base", "h200-141gb", "-o", dir.file("p.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("PyTorch's unvectorized kernels"), std::string::npos) << fit.out;
  const json fitted = json::parse(slurp(dir.file("p.json")));
  EXPECT_EQ(fitted["losses"], json::parse(slurp(run + "profile.json"))["losses"]);
  EXPECT_NEAR(fitted["losses"]["launch_gap_s"]["value"].get<double>(), 0.511e-6, 0.001e-6);
  EXPECT_NEAR(fitted["losses"]["eager_kernel_fixed_s"]["value"].get<double>(), 1.53e-6, 0.01e-6);
  EXPECT_NEAR(fitted["losses"]["unvectorized_bandwidth_fraction"]["value"].get<double>(), 0.441, 0.001);

  const std::string shown_line =
      "PyTorch's own kernels: 1.53 us a kernel beyond its bytes, unvectorized ones (casts, layout copies) at "
      "0.441 of the memory-bound bandwidth";
  const CommandResult show = run_pipescope({"calibrate", "show", dir.file("p.json")});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(shown_line), std::string::npos) << show.out;
  const CommandResult shown = run_pipescope({"calibrate", "show", dir.file("p.json"), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NEAR(json::parse(shown.out)["losses"]["unvectorized_bandwidth_fraction"].get<double>(), 0.441,
              0.001);
  ASSERT_EQ(run_pipescope({"calibrate", "show", dir.file("p.json"), "--html", dir.file("p.html")}).exit_code,
            0);
  EXPECT_NE(slurp(dir.file("p.html")).find("PyTorch's unvectorized kernels (casts, layout copies)"),
            std::string::npos);
  // The bundled H200 profile carries the same measurements.
  const CommandResult bundled = run_pipescope({"calibrate", "show", "h200-141gb"});
  ASSERT_EQ(bundled.exit_code, 0) << bundled.err;
  EXPECT_NE(bundled.out.find(shown_line), std::string::npos) << bundled.out;
  EXPECT_NE(bundled.out.find("launch gaps: 0.51 us"), std::string::npos) << bundled.out;
}

TEST(CalibrateFit, TheH200sLossesFromItsResultsAreTheProfilesInTheRepository) {
  // docs/gpu-runs/2026-11-27-h200-b: the sustained GEMM (with the table's entry for its shape) and
  // the layout and interference benchmarks, fitted over the suite-fitted profile of 2026-11-26.
  const std::string run = std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/2026-11-27-h200-b/";
  Dir dir;
  const CommandResult fit = run_pipescope({"calibrate", "fit", run + "sustained.json", run + "losses.json",
                                           "--base", kH200Profile, "-o", dir.file("p.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("sustained clocks"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("one bf16 GEMM shape, which makes no table; the base's table is kept"),
            std::string::npos)
      << fit.out;
  const json fitted = json::parse(slurp(dir.file("p.json")));
  const json kept = json::parse(slurp(run + "profile.json"));
  for (const char* loss : {"sustained_gemm_fraction", "dgrad_time_ratio", "wgrad_time_ratio",
                           "overlap_gemm_slowdown", "overlap_memory_bound_slowdown"}) {
    EXPECT_NEAR(fitted["losses"][loss]["value"].get<double>(), kept["losses"][loss]["value"].get<double>(),
                1e-12)
        << loss;
  }
  // 672 TFLOP/s settled against the table's 693: the clocks fell from 1980 to 1485 MHz at the cap.
  EXPECT_NEAR(fitted["losses"]["sustained_gemm_fraction"]["value"].get<double>(), 0.970, 0.001);
  EXPECT_EQ(fitted["gemm"], json::parse(slurp(kH200Profile))["gemm"]);

  const CommandResult show = run_pipescope({"calibrate", "show", dir.file("p.json")});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("sustained clocks: GEMMs and attention at 0.970 of the table"), std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("beside communication: GEMMs and attention +42.1%"), std::string::npos) << show.out;
  ASSERT_EQ(run_pipescope({"calibrate", "show", dir.file("p.json"), "--html", dir.file("p.html")}).exit_code,
            0);
  const std::string html = slurp(dir.file("p.html"));
  EXPECT_NE(html.find("<h2>Training losses</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.9703</td>"), std::string::npos);
  EXPECT_NE(html.find("settled at 672.1 TFLOP/s"), std::string::npos);
  const CommandResult shown_json = run_pipescope({"calibrate", "show", dir.file("p.json"), "--json"});
  ASSERT_EQ(shown_json.exit_code, 0) << shown_json.err;
  EXPECT_NEAR(json::parse(shown_json.out)["losses"]["sustained_gemm_fraction"].get<double>(), 0.970, 0.001);
  // The A100's losses are estimates carried over from the H100 and the H200 (scripts/a100-losses.py),
  // and `show` says so; the H200's are its own measurements.
  const CommandResult bundled = run_pipescope({"calibrate", "show", "a100-80gb"});
  ASSERT_EQ(bundled.exit_code, 0) << bundled.err;
  EXPECT_NE(bundled.out.find(
                "sustained clocks: GEMMs and attention at 0.915 of the table (not measured on this GPU"),
            std::string::npos)
      << bundled.out;
  EXPECT_NE(bundled.out.find("launch gaps: not measured (no loss priced)"), std::string::npos);
  EXPECT_EQ(show.out.find("not measured on this GPU"), std::string::npos) << show.out;
}

TEST(CalibrateFit, TheBundledH100ProfileIsItsTwoRunsFitted) {
  // The shipped h100-80gb profile is the suite's run on an H100 (docs/gpu-runs/2026-11-27-h100)
  // with the losses of the second run that day (-b) fitted over it; what one GPU cannot measure
  // is kept from the datasheet figures the profile carried before.
  const std::string docs = std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/";
  const std::string first = docs + "2026-11-27-h100/";
  const std::string second = docs + "2026-11-27-h100-b/";
  Dir dir;
  ASSERT_EQ(run_pipescope({"calibrate", "fit", first + "gpu.json", first + "nccl-1.json",
                           first + "attention.json", "--base", "h100-80gb", "-o", dir.file("a.json")})
                .exit_code,
            0);
  const CommandResult fit =
      run_pipescope({"calibrate", "fit", second + "sustained.json", second + "losses.json", "--base",
                     dir.file("a.json"), "-o", dir.file("p.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const json fitted = json::parse(slurp(dir.file("p.json")));
  const json bundled =
      json::parse(slurp(std::string(PIPESCOPE_SOURCE_DIR) + "/calibrate/profiles/h100-80gb.json"));
  for (const char* part :
       {"gemm", "attention", "memory_bound", "copies", "collectives", "memory_overheads", "losses"})
    EXPECT_EQ(fitted[part], bundled[part]) << part;
  // The suite's back-to-back table already runs at the clocks the GPU settles to at its cap.
  EXPECT_NEAR(bundled["losses"]["sustained_gemm_fraction"]["value"].get<double>(), 1.0, 0.001);
  const CommandResult show = run_pipescope({"calibrate", "show", "h100-80gb"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("GEMM bf16 8192x8192x8192            659 TFLOP/s"), std::string::npos) << show.out;
}

TEST(CalibrateFit, RefusesBadResultsInOneLine) {
  Dir dir;
  write_file(dir.file("not.json"), "{ not json");
  expect_bad_input(run_pipescope({"calibrate", "fit", dir.file("not.json"), "-o", dir.file("p.json")}),
                   "not JSON");
  write_file(dir.file("one.json"),
             R"({"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": [
                 {"name": "gemm/bf16/m:4096/n:4096/k:4096", "real_time": 200, "time_unit": "us"}]})");
  expect_bad_input(run_pipescope({"calibrate", "fit", dir.file("one.json"), "-o", dir.file("p.json")}),
                   "one bf16 GEMM shape, which makes no table");
  write_file(dir.file("nan.json"),
             R"({"benchmarks": [{"name": "hbm/copy/bytes:8", "real_time": "NaN", "bytes": 8}]})");
  expect_bad_input(run_pipescope({"calibrate", "fit", dir.file("nan.json"), "-o", dir.file("p.json")}),
                   "no numeric real_time");
  // A number beyond double in any JSON input: one line, exit 2, in every command that reads one.
  write_file(dir.file("huge.json"),
             R"({"context": {}, "benchmarks": [{"name": "hbm/copy/bytes:8", "real_time": 1e400}]})");
  expect_bad_input(run_pipescope({"calibrate", "fit", dir.file("huge.json"), "-o", dir.file("p.json")}),
                   "hold a number out of range");
  expect_bad_input(run_pipescope({"calibrate", "show", "h100-80gb", "--results", dir.file("huge.json")}),
                   "hold a number out of range");
  write_file(dir.file("huge-profile.json"), R"({"schema_version": 2, "gpu": "h100-80gb", "x": 1e400})");
  expect_bad_input(run_pipescope({"calibrate", "show", dir.file("huge-profile.json")}),
                   "holds a number out of range");
  std::vector<std::string> plan = kPlan;
  plan.insert(plan.end(), {"--calibration", dir.file("huge-profile.json")});
  expect_bad_input(run_pipescope(plan), "holds a number out of range");
  expect_bad_input(run_pipescope({"calibrate", "fit", "-o", dir.file("p.json")}),
                   "give benchmark result files");
  expect_bad_input(run_pipescope({"calibrate", "fit", "--trace", dir.str(), "-o", dir.file("p.json")}),
                   "--trace needs --plan PLAN.json: the plan of the run the traces came from");
  expect_bad_input(
      run_pipescope({"calibrate", "fit", "--plan", dir.file("one.json"), "-o", dir.file("p.json")}),
      "--plan needs --trace DIR");
  write_file(dir.file("cut-plan.json"), R"({"schema_version": 3, "uniform": {)");
  expect_bad_input(
      run_pipescope({"calibrate", "fit", "--trace", kH200Trace, "--plan", dir.file("cut-plan.json"), "-o",
                     dir.file("p.json")}),
      "cut-plan.json: not valid JSON (syntax error at byte 35) (expected 'pipescope plan --json' output)");
  EXPECT_FALSE(fs::exists(dir.file("p.json")));
}

double stage_s(const json& stage) {
  return stage["forward_s"].get<double>() + stage["backward_s"].get<double>();
}

// kPlan's `plan --json` document: what `calibrate fit --plan` reads back.
std::string plan_document() {
  std::vector<std::string> args = kPlan;
  args.emplace_back("--json");
  const CommandResult r = run_pipescope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The planner's stages for kPlan with `split` pinned, priced by `profile` (a file; empty: bundled).
json planned_stages(const std::string& split, const std::string& profile) {
  std::vector<std::string> args = kPlan;
  args.insert(args.end(), {"--split", split, "--json"});
  if (!profile.empty()) args.insert(args.end(), {"--calibration", profile});
  const CommandResult r = run_pipescope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["uniform"]["stages"];  // with --split: the given split
}

TEST(CalibrateFit, RefusesAPlanWhoseArgumentsNameWhatPlanWouldRefuse) {
  // A hand-edited plan: a word `plan` refuses on its command line is refused here too, not read
  // as the default.
  Dir dir;
  const std::string planned = plan_document();
  ASSERT_FALSE(planned.empty());
  fs::create_directories(dir.file("traces"));
  for (const auto& [key, word] : {std::pair{"optimizer", "adam"},
                                  {"recompute", "sometimes"},
                                  {"schedule", "zb-v"},
                                  {"balance", "cost"},
                                  {"framework", "megatron"},
                                  {"grad_sync", "never"}}) {
    json doc = json::parse(planned);
    doc["inputs"]["arguments"][key] = word;
    write_file(dir.file("edited.json"), doc.dump());
    expect_bad_input(run_pipescope({"calibrate", "fit", "--trace", dir.file("traces"), "--plan",
                                    dir.file("edited.json"), "-o", dir.file("p.json")}),
                     std::string("inputs.arguments.") + key + " '" + word + "'");
  }
}

TEST(CalibrateFit, RefusesAPlanOfAnotherVersionOrMissingAStagesLayers) {
  // The plan is read through the plan schema, as `report --plan` reads it.
  Dir dir;
  const std::string planned = plan_document();
  ASSERT_FALSE(planned.empty());
  fs::create_directories(dir.file("traces"));
  const auto refused = [&](const json& doc, const std::string& says) {
    write_file(dir.file("edited.json"), doc.dump());
    expect_bad_input(run_pipescope({"calibrate", "fit", "--trace", dir.file("traces"), "--plan",
                                    dir.file("edited.json"), "-o", dir.file("p.json")}),
                     says);
  };
  json newer = json::parse(planned);
  newer["schema_version"] = 4;
  refused(newer, "has plan schema_version 4; this pipescope reads versions 1 to 3");
  json no_layers = json::parse(planned);
  no_layers["suggested"]["stages"][0].erase("layers");
  refused(no_layers, "field 'suggested.stages[0].layers' is missing");
  json no_arguments = json::parse(planned);
  no_arguments["inputs"].erase("arguments");
  refused(no_arguments, "has no inputs.arguments");
  json words_for_gpus = json::parse(planned);
  words_for_gpus["inputs"]["arguments"]["gpus"] = "eight";
  refused(words_for_gpus, "edited.json: field 'inputs.arguments.gpus' must be an integer, got \"eight\"");
  json no_split = json::parse(planned);
  no_split["inputs"]["arguments"].erase("split");
  refused(no_split, "field 'inputs.arguments.split' is missing");
}

TEST(CalibrateFit, TracesOfARunMoveComputeAndMemoryPerStageTowardTheMeasurement) {
  Dir dir;
  const std::string planned = plan_document();
  ASSERT_FALSE(planned.empty());
  write_file(dir.file("plan.json"), planned);
  std::string split;
  const json suggested = json::parse(planned)["suggested"]["stages"];
  for (const json& s : suggested)
    split += (split.empty() ? "" : ",") + std::to_string(s["layers"].get<int>());
  const json before = planned_stages(split, "");
  ASSERT_EQ(before.size(), 4u);

  // The planner's GEMM and attention time per stage, found independently of calibrate: with a
  // category's efficiencies halved its time doubles, so the stage grows by it once.
  auto bundled = planner::load_calibration_profile("h100-80gb");
  ASSERT_TRUE(bundled.ok());
  planner::CalibrationProfile slow_gemm = *bundled, slow_attention = *bundled, slow_memory = *bundled;
  for (auto& g : slow_gemm.gemm) g.efficiency /= 2;
  for (auto* pass : {&slow_attention.attention_forward, &slow_attention.attention_backward})
    for (auto& a : *pass) a.efficiency /= 2;
  slow_memory.hbm_bandwidth_fraction.value /= 2;
  write_file(dir.file("slow-gemm.json"), planner::write_calibration_profile(slow_gemm));
  write_file(dir.file("slow-attention.json"), planner::write_calibration_profile(slow_attention));
  write_file(dir.file("slow-memory.json"), planner::write_calibration_profile(slow_memory));
  const json gemm_doubled = planned_stages(split, dir.file("slow-gemm.json"));
  const json attention_doubled = planned_stages(split, dir.file("slow-attention.json"));
  const json memory_doubled = planned_stages(split, dir.file("slow-memory.json"));

  // The run: every stage 30% slower than predicted, its compute 60% GEMM, 20% attention and 20%
  // elementwise kernels; its reserved memory allocated x 1.25 + the fixed overheads the profile prices
  // (the profile says x 1.10). 1F1B keeps 4 - k micro-batches of 1 GiB on stage k.
  synthetic::SyntheticRunSpec spec;
  spec.tp = 2;
  spec.pp = 4;
  spec.dp = 2;
  spec.microbatches = 8;
  spec.steps = 2;
  spec.gemm_share = 0.6;
  spec.attention_share = 0.2;
  spec.activation_bytes = 1ull << 30;
  std::vector<double> measured_memory;
  for (size_t k = 0; k < 4; ++k) {
    spec.stage_forward_ns.push_back(std::llround(before[k]["forward_s"].get<double>() * 1.3e9));
    spec.stage_backward_ns.push_back(std::llround(before[k]["backward_s"].get<double>() * 1.3e9));
    const double allocated = before[k]["allocated_bytes"].get<double>();
    const double fixed = before[k]["peak_memory_bytes"].get<double>() - allocated * 1.1;
    measured_memory.push_back(allocated * 1.25 + fixed);
    spec.stage_static_bytes.push_back(static_cast<uint64_t>(std::llround(measured_memory[k])) -
                                      (4 - k) * spec.activation_bytes);
  }
  fs::create_directories(dir.file("traces"));
  auto truth = synthetic::write_synthetic_run(spec, dir.file("traces"));
  ASSERT_TRUE(truth.ok()) << truth.error().message;

  const CommandResult fit = run_pipescope({"calibrate", "fit", "--trace", dir.file("traces"), "--plan",
                                           dir.file("plan.json"), "-o", dir.file("refined.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("GEMM time, planner vs the run: "), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("attention time, planner vs the run: "), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("peak memory (reserved), mean |error| of the planner: "), std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("memory-bound time, planner vs the run: "), std::string::npos) << fit.out;

  // The same refinement as JSON: the run's figures per stage beside the plan before and after.
  const CommandResult as_json =
      run_pipescope({"calibrate", "fit", "--trace", dir.file("traces"), "--plan", dir.file("plan.json"),
                     "--json", "-o", dir.file("again.json")});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json r = json::parse(as_json.out)["refinement"];
  // Memory-bound work is refined as one ratio over the stages (the HBM bandwidth fraction):
  // the run's elementwise time over the planner's memory-bound time with the optimizer's share.
  double measured_memory_bound = 0, planned_memory_bound = 0;
  for (const json& st : r["stages"]) {
    measured_memory_bound += st["run"]["memory_bound_s"].get<double>();
    planned_memory_bound += st["before"]["memory_bound_s"].get<double>();
  }
  const double memory_scale = measured_memory_bound / planned_memory_bound;
  EXPECT_NEAR(r["memory_bound_scale"].get<double>(), memory_scale, 1e-6);

  const json after = planned_stages(split, dir.file("refined.json"));
  for (size_t k = 0; k < 4; ++k) {
    const double predicted = stage_s(before[k]), measured = 1.3 * predicted;
    const double gemm = stage_s(gemm_doubled[k]) - predicted,
                 attention = stage_s(attention_doubled[k]) - predicted,
                 memory_bound = stage_s(memory_doubled[k]) - predicted;
    // GEMM and attention now take what their kernels took (0.78 and 0.26 of the prediction), the
    // memory-bound work the run's ratio over all stages; communication is unchanged.
    EXPECT_NEAR(stage_s(after[k]),
                predicted - gemm - attention - memory_bound + 0.6 * measured + 0.2 * measured +
                    memory_scale * memory_bound,
                0.01 * predicted)
        << "stage " << k << fit.out;
    EXPECT_LT(std::abs(stage_s(after[k]) - measured), std::abs(predicted - measured)) << "stage " << k;
    // Memory: the refitted reserve fraction (0.25) reproduces every stage's peak.
    EXPECT_NEAR(after[k]["peak_memory_bytes"].get<double>(), measured_memory[k], 0.002 * measured_memory[k])
        << "stage " << k;
    EXPECT_GT(std::abs(before[k]["peak_memory_bytes"].get<double>() - measured_memory[k]),
              0.05 * measured_memory[k]);
  }
  const json refined = json::parse(slurp(dir.file("refined.json")));
  EXPECT_NEAR(refined["memory_overheads"]["allocator_reserve_fraction"]["value"].get<double>(), 0.25, 1e-3);

  EXPECT_EQ(r["compute_basis"], "kernels");
  EXPECT_TRUE(r["memory_refined"].get<bool>());
  ASSERT_EQ(r["stages"].size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    const json& st = r["stages"][k];
    const double measured = 1.3 * stage_s(before[k]);
    EXPECT_NEAR(st["run"]["gemm_s"].get<double>(), 0.6 * measured, 1e-3 * measured) << k;
    EXPECT_NEAR(st["run"]["attention_s"].get<double>(), 0.2 * measured, 1e-3 * measured) << k;
    EXPECT_NEAR(st["run"]["memory_bound_s"].get<double>(), 0.2 * measured, 1e-3 * measured) << k;
    EXPECT_NEAR(st["run"]["peak_memory_bytes"].get<double>(), measured_memory[k], 1) << k;
    EXPECT_NEAR(st["before"]["gemm_s"].get<double>(), stage_s(gemm_doubled[k]) - stage_s(before[k]), 1e-9)
        << k;
  }
  EXPECT_NEAR(r["error_before"]["compute"].get<double>(), 1 / 1.3 - 1, 1e-3);
  EXPECT_LT(std::abs(r["error_after"]["gemm"].get<double>()), 1e-3);
  EXPECT_LT(std::abs(r["error_after"]["attention"].get<double>()), 1e-3);
  EXPECT_LT(std::abs(r["error_after"]["memory_bound"].get<double>()), 1e-3);
  EXPECT_LT(r["error_after"]["memory"].get<double>(), 1e-3);
  EXPECT_NE(refined["gemm"]["points"][0]["source"].get<std::string>().find("the run's GEMM kernel time"),
            std::string::npos);
}

TEST(CalibrateFit, RefinedWithTheRealH200TraceThePlanMeetsItsKernelsKindByKind) {
  // The 1B run of docs/validation.md, V10, and its plan: GEMM priced 19 % slow, attention 65 %
  // slow, memory-bound work 74 % fast (eager kernels). Refined with that trace, every kind meets
  // the run's kernels (this is fitting, not validation: the profile now prices this framework).
  Dir dir;
  const CommandResult plan = plan_h200_llama_1b();
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  write_file(dir.file("plan.json"), plan.out);
  const CommandResult fit =
      run_pipescope({"calibrate", "fit", "--trace", kH200Trace, "--plan", dir.file("plan.json"), "--base",
                     kH200Profile, "--gpu", "h200-141gb", "--json", "-o", dir.file("refined.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const json r = json::parse(fit.out)["refinement"];
  EXPECT_EQ(r["compute_basis"], "kernels");
  EXPECT_NEAR(r["error_before"]["gemm"].get<double>(), 0.193, 0.002);
  EXPECT_NEAR(r["error_before"]["attention"].get<double>(), 0.648, 0.002);
  EXPECT_NEAR(r["error_before"]["memory_bound"].get<double>(), -0.744, 0.002);
  for (const char* kind : {"gemm", "attention", "memory_bound", "memory"})
    EXPECT_LT(std::abs(r["error_after"][kind].get<double>()), 0.002) << kind;
}

TEST(CalibrateFit, AGpuWithoutABundledProfileFromItsResultsAloneOrOverAnotherGpusBase) {
  Dir dir;
  calibrate::testing::SyntheticGpu b200;
  b200.gpu_name = "NVIDIA B200";
  b200.peak_bf16_flops_per_s = 2250e12;
  b200.every_collective = true;
  write_file(dir.file("full.json"), calibrate::testing::synthetic_results_json(b200));
  const CommandResult fit =
      run_pipescope({"calibrate", "fit", dir.file("full.json"), "-o", dir.file("b200.json")});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("NVIDIA B200 (b200-180gb)"), std::string::npos) << fit.out;
  EXPECT_NE(
      fit.out.find("kept from the GPU-independent entries of the bundled h100-80gb profile (not measured): "
                   "collectives inter_node all_reduce"),
      std::string::npos)
      << fit.out;
  const CommandResult planned =
      run_pipescope({"plan", "--model", "llama2-7b", "--gpu", "b200-180gb", "--gpus", "8", "--tp", "8",
                     "--pp", "1", "--calibration", dir.file("b200.json")});
  EXPECT_EQ(planned.exit_code, 0) << planned.err;

  b200.every_collective = false;
  write_file(dir.file("partial.json"), calibrate::testing::synthetic_results_json(b200));
  expect_bad_input(run_pipescope({"calibrate", "fit", dir.file("partial.json"), "-o", dir.file("p.json")}),
                   "or pass --base NAME|FILE for them");
  EXPECT_FALSE(fs::exists(dir.file("p.json")));
  const CommandResult based = run_pipescope(
      {"calibrate", "fit", dir.file("partial.json"), "--base", "h100-80gb", "-o", dir.file("p.json")});
  ASSERT_EQ(based.exit_code, 0) << based.err;
  EXPECT_NE(based.out.find("kept from the bundled h100-80gb profile (another GPU, given as --base)"),
            std::string::npos)
      << based.out;
  EXPECT_EQ(json::parse(slurp(dir.file("p.json")))["gpu"], "b200-180gb");
}

TEST(CalibrateShow, SummarizesAgainstPeakAndPlotsTheCurves) {
  Dir dir;
  const CommandResult bundled = run_pipescope({"calibrate", "show", "h100-80gb"});
  ASSERT_EQ(bundled.exit_code, 0) << bundled.err;
  EXPECT_NE(bundled.out.find("GEMM bf16 8192x8192x8192"), std::string::npos) << bundled.out;
  EXPECT_NE(bundled.out.find("989 TFLOP/s"), std::string::npos) << bundled.out;
  EXPECT_NE(bundled.out.find("memory-bound kernels (HBM)"), std::string::npos) << bundled.out;
  // The inter-node latency says the scale it was measured at, from which the planner grows it.
  EXPECT_NE(bundled.out.find("latency 99.3 us on 32 ranks over 4 nodes, grown with NCCL's tuning model"),
            std::string::npos)
      << bundled.out;

  write_file(dir.file("gpu.json"), calibrate::testing::synthetic_results_json());
  ASSERT_EQ(run_pipescope({"calibrate", "fit", dir.file("gpu.json"), "-o", dir.file("p.json")}).exit_code, 0);
  const CommandResult shown = run_pipescope({"calibrate", "show", dir.file("p.json"), "--html",
                                             dir.file("p.html"), "--results", dir.file("gpu.json")});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("measured on NVIDIA H100 80GB HBM3, driver 580.65.06"), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("intra_node all_reduce 8 ranks"), std::string::npos) << shown.out;
  const std::string html = slurp(dir.file("p.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_GE(std::count(html.begin(), html.end(), '<'), 100);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("GEMM bf16"), std::string::npos);
  EXPECT_EQ(html.find("http://") != std::string::npos && html.find("src=\"http") != std::string::npos, false);
  expect_bad_input(run_pipescope({"calibrate", "show", dir.file("missing.json")}), "cannot read");

  // --json: the same summary as one document. The bundled H100 profile is this suite's run on an
  // H100 (docs/gpu-runs/2026-11-27-h100): memory-bound kernels at 3.04 of its 3.35 TB/s.
  const CommandResult as_json = run_pipescope({"calibrate", "show", "h100-80gb", "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json doc = json::parse(as_json.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["gpu"], "h100-80gb");
  EXPECT_EQ(doc["provenance"]["gpu_device_name"], "NVIDIA H100 80GB HBM3");
  bool hbm = false;
  for (const json& row : doc["achieved"]) {
    if (row["category"] != "memory_bound") continue;
    hbm = true;
    EXPECT_NEAR(row["fraction"].get<double>(), 0.906, 0.001);
    EXPECT_DOUBLE_EQ(row["achieved"].get<double>(), row["fraction"].get<double>() * 3.35e12);
  }
  EXPECT_TRUE(hbm);
  EXPECT_EQ(doc["collectives"].size(), 10u);  // five kinds on two tiers, none measured
  int scaled = 0;
  for (const json& row : doc["collectives"]) {
    if (!row.contains("latency_ranks")) continue;
    ++scaled;
    EXPECT_EQ(row["tier"], "inter_node");
    EXPECT_EQ(row["latency_ranks"], 32);
    EXPECT_EQ(row["latency_nodes"], 4);
  }
  EXPECT_EQ(scaled, 3);  // all-reduce, all-gather, reduce-scatter
  EXPECT_DOUBLE_EQ(doc["memory_overheads"]["allocator_reserve_fraction"].get<double>(), 0.1);

  // Another GPU's results over this profile's curves: shown, with a note on stderr.
  const CommandResult mismatch = run_pipescope(
      {"calibrate", "show", "a100-80gb", "--html", dir.file("a.html"), "--results", dir.file("gpu.json")});
  EXPECT_EQ(mismatch.exit_code, 0) << mismatch.err;
  EXPECT_EQ(mismatch.err,
            "pipescope calibrate show: note: the results come from 'NVIDIA H100 80GB HBM3' (h100-80gb), the "
            "profile describes a100-80gb: the plots put one GPU's points over another's curves\n");
}

TEST(CalibrateRun, WithoutAGpuTheProfileAskedForIsAFailureAndADryRunSucceeds) {
  if (run_command({"sh", "-c", "nvidia-smi -L 2>/dev/null | grep -q '^GPU'"}).exit_code == 0) {
    GTEST_SKIP() << "this machine has a GPU: calibrate run would measure it (scripts/gpu-calibrate.sh does)";
  }
  // `calibrate run -o cal.json && plan --calibration cal.json` must stop at the first command.
  Dir dir;
  const CommandResult r = run_pipescope({"calibrate", "run", "--quick", "-o", dir.file("cal.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("no GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cal.json not written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("cal.json")));
  const CommandResult dry = run_pipescope({"calibrate", "run", "--quick", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("no GPU"), std::string::npos) << dry.out << dry.err;
}

// A stand-in for the GPU suite: lists benchmarks and names a device, as gpu_benchmark does.
std::string fake_suite(const Dir& dir, const std::string& device) {
  std::string suite = dir.file("suite");
  fs::create_directories(suite);
  const std::string program = suite + "/gpu_benchmark";
  write_file(program, "#!/bin/sh\necho 'device: " + device + "' >&2\necho gemm/bf16/m:1024/n:1024/k:1024\n");
  fs::permissions(program, fs::perms::owner_all);
  return suite;
}

CommandResult run_with_suite(const std::string& suite, const std::vector<std::string>& args) {
  // The run keeps its raw results in a work directory under TMPDIR: beside the stand-in suite.
  std::vector<std::string> argv = {"/usr/bin/env", "PIPESCOPE_SUITE_DIR=" + suite, "TMPDIR=" + suite,
                                   PIPESCOPE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

TEST(CalibrateRun, ADeviceThePlannerCannotPriceIsRefusedBeforeMeasuring) {
  if (run_command({"sh", "-c", "nvidia-smi -L 2>/dev/null | grep -q '^GPU'"}).exit_code == 0)
    GTEST_SKIP() << "this machine has GPUs: the run's checks would count them";
  Dir dir;
  const std::string pcie = fake_suite(dir, "NVIDIA H100 PCIe");
  expect_bad_input(run_with_suite(pcie, {"calibrate", "run", "-o", dir.file("p.json")}),
                   "is an H100 PCIe (756 TFLOP/s dense BF16");
  EXPECT_FALSE(fs::exists(dir.file("p.json")));

  // B200 has no bundled profile and one visible GPU measures no collective: refused at the start,
  // and accepted over another GPU's profile.
  Dir other;
  const std::string b200 = fake_suite(other, "NVIDIA B200");
  expect_bad_input(run_with_suite(b200, {"calibrate", "run", "--dry-run"}),
                   "no calibration profile of b200-180gb to keep what this run cannot measure (intra-node "
                   "collectives: ");
  const CommandResult based = run_with_suite(b200, {"calibrate", "run", "--dry-run", "--base", "h100-80gb"});
  EXPECT_EQ(based.exit_code, 0) << based.err;
  EXPECT_NE(based.out.find("NVIDIA B200 is b200-180gb; what it does not measure (intra-node collectives"),
            std::string::npos)
      << based.out;
  EXPECT_NE(based.out.find("comes from the bundled h100-80gb profile (another GPU, given as --base)"),
            std::string::npos)
      << based.out;
}

TEST(CalibrateRun, RunsTheSuiteWithAProgressBarAndFitsWhatItWrote) {
  if (run_command({"sh", "-c", "nvidia-smi -L 2>/dev/null | grep -q '^GPU'"}).exit_code == 0)
    GTEST_SKIP() << "this machine has GPUs: the real suite would run beside the stand-in";
  // A stand-in gpu_benchmark: lists two names, and when run prints their console lines and
  // writes the synthetic H100's results where --benchmark_out says.
  Dir dir;
  write_file(dir.file("results.json"), calibrate::testing::synthetic_results_json());
  const std::string suite = dir.file("suite");
  fs::create_directories(suite);
  write_file(
      suite + "/gpu_benchmark",
      "#!/bin/sh\n"
      "case \"$*\" in *--benchmark_list_tests*) echo 'device: NVIDIA H100 80GB HBM3' >&2;\n"
      "  echo gemm/bf16/m:1024/n:1024/k:1024/manual_time; echo hbm/copy/bytes:1048576/manual_time; exit 0;; "
      "esac\n"
      "for a in \"$@\"; do case \"$a\" in --benchmark_out=*) cp " +
          dir.file("results.json") +
          " \"${a#--benchmark_out=}\";; esac; done\n"
          "echo 'gemm/bf16/m:1024/n:1024/k:1024/manual_time   25.1 us   25.3 us   4000'\n"
          "echo 'hbm/copy/bytes:1048576/manual_time   1.2 us   1.3 us   9000'\n");
  fs::permissions(suite + "/gpu_benchmark", fs::perms::owner_all);
  const CommandResult r = run_with_suite(suite, {"calibrate", "run", "-o", dir.file("p.json")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("[##############################] 2/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("~0m00s left"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("wrote " + dir.file("p.json")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("raw results kept in " + suite + "/pipescope-calibrate."), std::string::npos) << r.out;
  const json profile = json::parse(slurp(dir.file("p.json")));
  EXPECT_EQ(profile["provenance"]["command"], "pipescope calibrate run -o " + dir.file("p.json"));
}

}  // namespace
}  // namespace pipescope::testing
