// `pipescope report` and `pipescope export` as users run them: outputs on a simulated run, a
// directory of PyTorch profiler traces, and every kind of bad input (one line, exit 2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "gzip_json.h"
#include "h100_pp4_run.h"
#include "h200_run.h"
#include "kineto_trace.h"
#include "report_test_support.h"

namespace pipescope::testing {
namespace {

using pipescope::trace::test::read_gz_json;

namespace fs = std::filesystem;
using Dir = ScratchDir;

TEST(ReportCommand, TerminalReportPutsFindingsFirst) {
  Dir dir;
  write_run(dir);
  const CommandResult r = run_pipescope({"report", dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t findings = r.out.find("findings");
  ASSERT_NE(findings, std::string::npos);
  EXPECT_LT(findings, r.out.find("pipeline stages"));
  EXPECT_NE(r.out.find("tp 2 x pp 4 x dp 2"), std::string::npos);
  EXPECT_NE(r.out.find("memory imbalance: stage 0 holds 4.0x the activations of stage 3"), std::string::npos);
}

TEST(ReportCommand, JsonHasTheDocumentedKeys) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.straggler_rank = 9;
  spec.straggler_delay_ns = 15'000'000;
  write_run(dir, spec);
  const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["layout"]["tp"], 2);
  EXPECT_EQ(doc["layout"]["pp"], 4);
  EXPECT_EQ(doc["layout"]["dp"], 2);
  EXPECT_EQ(doc["layout"]["zero_shard"], 1);
  ASSERT_EQ(doc["ranks"].size(), 16u);
  const auto& r9 = doc["ranks"][9];
  EXPECT_EQ(r9["rank"], 9);
  EXPECT_EQ(r9["stage"], 2);  // rank = tp + 2 * (dp + 2 * stage)
  EXPECT_EQ(r9["tp_rank"], 1);
  EXPECT_EQ(r9["dp_rank"], 0);
  EXPECT_GT(r9["peak_memory_bytes"].get<uint64_t>(), 8ull << 30);
  ASSERT_EQ(doc["stragglers"].size(), 1u);
  EXPECT_EQ(doc["stragglers"][0]["rank"], 9);
}

bool has_text(const nlohmann::json& list, const std::string& part) {
  for (const auto& item : list)
    if (item.get<std::string>().find(part) != std::string::npos) return true;
  return false;
}

// A real trace from an H200 (tests/data/gpu/README.md): CUPTI's records as the GPU wrote them.
TEST(ReportCommand, ARealH200TraceOfEagerPyTorchTrainingReadsAsItRan) {
  const std::string& dir = kH200Trace;
  const CommandResult r = run_pipescope({"report", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["ranks"].size(), 1u);
  EXPECT_EQ(doc["steps"]["source"], "nvtx");
  EXPECT_EQ(doc["steps"]["count"], 35);  // 5 warm-up and 30 timed train_step ranges
  // Each step from its start to the next's: the GPU work the host queued in 79 ms (the ranges'
  // median) ran for 145 ms. The run timed its own steps (synchronized) at a median of 144.9 ms
  // (docs/gpu-runs/2026-11-26-h200/train/overhead-pipescope.json).
  EXPECT_EQ(doc["steps"]["step_ns"].size(), 34u);
  EXPECT_NEAR(doc["steps"]["median_ns"].get<double>() * 1e-6, 144.9, 1.5);
  std::map<std::string, double> share;
  uint64_t kernels = 0;
  for (const auto& c : doc["kernel_categories"]) {
    share[c["category"].get<std::string>()] = c["share"].get<double>();
    kernels += c["count"].get<uint64_t>();
  }
  EXPECT_EQ(kernels, 56094u);  // every kernel, copy and memset: 47,996 + 165 + 7,933
  // CUPTI handed some streams' records over up to a second late: all still in order, so the
  // union of compute kernels (one stream) is their sum, less the few launched before step 1.
  const auto& gpu = doc["ranks"][0]["gpu"];
  EXPECT_EQ(gpu["out_of_order_intervals"], 0);
  EXPECT_TRUE(gpu["from_first_step"].get<bool>());  // 6.5 s of model construction before it
  int64_t kernel_ns = 0;
  for (const auto& c : doc["kernel_categories"])
    if (c["category"] != "copy") kernel_ns += c["total_ns"].get<int64_t>();
  EXPECT_LE(gpu["compute_ns"].get<int64_t>(), kernel_ns);
  EXPECT_GE(gpu["compute_ns"].get<double>(), 0.99 * static_cast<double>(kernel_ns));
  EXPECT_NEAR(gpu["gpu_busy_fraction"].get<double>(), 0.87, 0.01);
  // Eager PyTorch: unfused elementwise kernels take more of the GPU than the GEMMs, and the
  // findings point at that lever, with the numbers. The optimizer's foreach / fused Adam kernels
  // (multi_tensor_apply_kernel, CUPTI names them by mangled symbol) count as elementwise.
  EXPECT_NEAR(share["elementwise"], 0.51, 0.01);
  EXPECT_NEAR(share["gemm"], 0.39, 0.01);
  EXPECT_NEAR(share["other"], 0.02, 0.01);
  EXPECT_TRUE(
      has_text(doc["findings"],
               "memory-bound (elementwise) kernels take 51% of the GPU's kernel and copy time, more than "
               "the GEMMs (39%): fusing them (torch.compile, fused kernels) is where time can be won"))
      << doc["findings"].dump();
  // Kernel names read as in Nsight Systems: demangled, no return type or parameters; the symbol
  // as CUPTI gave it beside.
  bool demangled = false;
  for (const auto& k : doc["kernels"]) {
    const std::string name = k["name"], symbol = k["symbol"];
    EXPECT_FALSE(name.starts_with("_Z")) << name;
    EXPECT_FALSE(name.ends_with(")")) << name;  // no parameter list ("(anonymous namespace)" stays)
    demangled = demangled || (symbol.starts_with("_Z") && name.starts_with("at::native::"));
  }
  EXPECT_TRUE(demangled);
  EXPECT_NEAR(share["attention"], 0.075, 0.005);  // cuDNN's fused SDPA kernels
  // The caching allocator's reservations: 28.71 GiB at the peak.
  EXPECT_EQ(doc["ranks"][0]["memory_figure"], "reserved");
  EXPECT_NEAR(doc["ranks"][0]["peak_memory_bytes"].get<double>() / double(1ull << 30), 28.71, 0.01);
  // Percentiles from every launch's duration: ordered, within the launches' range, and as
  // precise as the launches are tight (the fp32 multiply: 3,360 launches of 129 us).
  for (const auto& k : doc["kernels"]) {
    EXPECT_LE(k["p50_ns"].get<int64_t>(), k["p90_ns"].get<int64_t>()) << k["name"];
    EXPECT_LE(k["p90_ns"].get<int64_t>(), k["p99_ns"].get<int64_t>()) << k["name"];
    EXPECT_LE(k["p99_ns"].get<int64_t>(), k["max_ns"].get<int64_t>()) << k["name"];
  }
  const auto& multiply = doc["kernels"][1];
  ASSERT_EQ(multiply["count"], 3360);
  EXPECT_NEAR(multiply["p50_ns"].get<double>(), multiply["mean_ns"].get<double>(),
              0.01 * multiply["mean_ns"].get<double>());
  ASSERT_EQ(doc["stages"].size(), 1u);
  // Eager PyTorch returns from the launches long before the GPU has run them: the forward and
  // backward ranges (85 ms a step) are the host's, and the report says so.
  bool host_side = false;
  for (const auto& w : doc["warnings"]) {
    host_side = host_side ||
                w.get<std::string>().find("the host queued the work ahead of the GPU") != std::string::npos;
  }
  EXPECT_TRUE(host_side);
  // The GPU's own time a micro-batch (one a step): every kernel but NCCL's, and the copies.
  EXPECT_NEAR(doc["stages"][0]["gpu_ns_per_microbatch"].get<double>() * 1e-6, 140.9, 0.1);
  EXPECT_NEAR(doc["stages"][0]["forward_mean_ns"].get<double>() * 1e-6, 32.9, 0.1);
  EXPECT_NEAR(doc["stages"][0]["backward_mean_ns"].get<double>() * 1e-6, 52.5, 0.1);
}

// The same 1B model traced with --kernel-sample 10 on an H200 (tests/data/gpu/README.md), by a
// build that sampled steps 0, 10 and 20. The GPU's shares are of those steps, not of the whole
// run, where nine steps in ten would read as idle.
TEST(ReportCommand, AKernelSampledTraceGivesTheGpuSharesOfTheRecordedSteps) {
  const std::string dir = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/gpu/h200-1b-sampled";
  const CommandResult r = run_pipescope({"report", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["ranks"].size(), 1u);
  const auto& gpu = doc["ranks"][0]["gpu"];
  EXPECT_EQ(gpu["kernel_sample_steps"], 10);
  // The span is the three recorded steps, each from its start to the next step's (the steps are
  // synchronized, so no GPU work crosses their edges): 530.8 + 147.8 + 148.1 ms of 4.64 s.
  const auto& step_ns = doc["steps"]["step_ns"];
  ASSERT_GE(step_ns.size(), 21u);
  const double recorded_steps_ns =
      step_ns[0].get<double>() + step_ns[10].get<double>() + step_ns[20].get<double>();
  EXPECT_NEAR(gpu["span_ns"].get<double>(), recorded_steps_ns, 1e5);
  EXPECT_NEAR(gpu["recorded_fraction"].get<double>(), 0.178, 0.001);
  // Busy about half of it: the warm-up step 0 (530 ms, a quarter of it computing) weighs most,
  // which is why sampling now records the last step of every N instead. Against the whole span
  // the shares would say idle 91 %.
  EXPECT_NEAR(gpu["gpu_busy_fraction"].get<double>(), 0.49, 0.01);
  bool said = false;
  for (const auto& line : doc["findings"])
    said = said || line.get<std::string>().find("GPU activity recorded in 1 step of 10") != std::string::npos;
  EXPECT_TRUE(said) << doc["findings"].dump();
  // The switches are not warnings.
  for (const auto& line : doc["warnings"])
    EXPECT_EQ(line.get<std::string>().find("notice 1"), std::string::npos) << line;
}

TEST(ReportCommand, TheRealH200TraceAgainstItsPlanKindByKind) {
  // docs/validation.md, V10: the 1B step's plan (from that GPU's calibration) against its trace.
  Dir out;
  const CommandResult plan = plan_h200_llama_1b();
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::ofstream(out.file("plan.json")) << plan.out;
  const CommandResult r = run_pipescope({"report", kH200Trace, "--plan", out.file("plan.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stage = nlohmann::json::parse(r.out)["plan"]["stages"][0];
  // The trace's kernels over its 35 steps: GEMM 1,931.4 ms, attention 371.9 ms; elementwise,
  // other, embedding and copies 2,627.5 ms.
  EXPECT_NEAR(stage["measured_gemm_s"].get<double>(), 1.9314 / 35, 0.0002);
  EXPECT_NEAR(stage["measured_attention_s"].get<double>(), 0.3719 / 35, 0.0002);
  EXPECT_NEAR(stage["measured_memory_bound_s"].get<double>(), 2.6275 / 35, 0.0002);
  // The text and the HTML page show the same comparison.
  const CommandResult text = run_pipescope(
      {"report", kH200Trace, "--plan", out.file("plan.json"), "--html", out.file("report.html")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GPU time a step by kind of work"), std::string::npos) << text.out;
  EXPECT_NE(slurp(out.file("report.html")).find("GPU time a step by kind of work"), std::string::npos);
  const auto work = nlohmann::json::parse(plan.out)["suggested"]["busiest_stage_work_per_step"];
  EXPECT_NEAR(stage["predicted_gemm_s"].get<double>(), work["gemm_s"].get<double>(), 1e-12);
  EXPECT_NEAR(stage["predicted_memory_bound_s"].get<double>(),
              work["memory_bound_s"].get<double>() + work["optimizer_s"].get<double>(), 1e-12);
}

TEST(ReportCommand, TheRealH200TracesGpuTimeStartsAtItsFirstStepInEveryFormat) {
  const std::string& dir = kH200Trace;
  Dir out;
  const CommandResult r = run_pipescope({"report", dir, "--html", out.file("report.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("idle 13% (all ranks, from the first step on)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU span from its first step on"), std::string::npos) << r.out;
  EXPECT_NE(slurp(out.file("report.html")).find("From each rank's first step on"), std::string::npos);
}

// A real 1F1B pipeline (tests/data/gpu/README.md): four stage processes that never learned their
// rank, each marking its stage with NVTX, beside the launcher that spawned them.
TEST(ReportCommand, TheRealH100PipelineIsFourStagesOfOneRankWithoutItsLauncher) {
  const CommandResult r = run_pipescope({"report", kH100Pp4Trace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(
      has_text(doc["warnings"],
               kH100Pp4Launcher + " recorded no GPU work, NCCL or NVTX (a launcher process?); left out"));
  EXPECT_FALSE(has_text(doc["warnings"], kH100Pp4Launcher + " never learned its rank"));
  // The four stage processes shared the machine's one GPU (its UUID, as nvidia-smi spells it).
  EXPECT_TRUE(
      has_text(doc["warnings"],
               "ranks 0,1,2,3 ran their kernels on one GPU (GPU-88ad7184-12f7-df3b-ceab-d9d8ecc542bd)"));
  EXPECT_EQ(doc["layout"]["world_size"], 4);
  EXPECT_EQ(doc["layout"]["pp"], 4);
  ASSERT_EQ(doc["ranks"].size(), 4u);
  ASSERT_EQ(doc["files"].size(), 4u);
  // Stage k is the process that marked stage=<k>: the stages were spawned in order, pids 791..794.
  for (size_t k = 0; k < 4; ++k) {
    // Their stages talked through gloo: no NCCL collective or transfer to measure waits on.
    EXPECT_TRUE(doc["ranks"][k]["collective_wait_ns"].is_null()) << k;
    EXPECT_TRUE(doc["ranks"][k]["gpu"]["comm_wait_ns"].is_null()) << k;
    EXPECT_EQ(doc["ranks"][k]["rank"], k);
    EXPECT_EQ(doc["ranks"][k]["stage"], k);
    EXPECT_EQ(fs::path(doc["files"][k]["path"].get<std::string>()).filename(),
              "rank-x." + std::to_string(791 + k) + ".pst");
  }
  // Each stage's peak is what its own process measured (torch.cuda.max_memory_reserved, in
  // docs/gpu-runs/2026-11-27-h100/train/pipeline-traced.json) plus the same 128.3 MiB in every
  // stage that the device memory records hold beyond the caching allocator's reservations: stage
  // 0, holding the activations of 4 micro-batches in 1F1B, the highest.
  const uint64_t max_reserved_bytes[] = {10'550'771'712, 8'147'435'520, 6'943'670'272, 7'501'512'704};
  ASSERT_EQ(doc["stages"].size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(doc["stages"][k]["stage"], k);
    EXPECT_EQ(doc["stages"][k]["ranks"], 1);
    EXPECT_EQ(doc["stages"][k]["peak_memory_bytes"].get<uint64_t>(), max_reserved_bytes[k] + 134'532'616)
        << k;
  }
  EXPECT_TRUE(has_text(doc["findings"], "memory imbalance: stage 0 holds 1.6x the activations of stage 3"));
  // The four stages shared one GPU and passed activations through gloo: their NVTX ranges take in
  // the blocking receives and the GPU's busy time takes in the other stages' slices, so the bubble
  // is not measured (it read 0% in every stage), and no NCCL p2p was there to time (null, not 0).
  EXPECT_TRUE(has_text(doc["findings"], "pipeline bubble: not measured (stages ran on one GPU"))
      << doc["findings"].dump();
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(doc["stages"][k]["shares_gpu"].get<bool>()) << k;
    EXPECT_TRUE(doc["stages"][k]["bubble_fraction"].is_null()) << k;
    EXPECT_TRUE(doc["stages"][k]["p2p_ns"].is_null()) << k;
    EXPECT_TRUE(doc["stages"][k]["p2p_wait_ns"].is_null()) << k;
    EXPECT_TRUE(doc["ranks"][k]["p2p_ns"].is_null()) << k;
    EXPECT_TRUE(doc["ranks"][k]["bubble_fraction"].is_null()) << k;
  }

  const CommandResult text = run_pipescope({"report", kH100Pp4Trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(no run id attempt 0, 4 rank traces)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("world 4: tp 1 x pp 4 x dp 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("! " + kH100Pp4Launcher + " recorded no GPU work"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank-x.794.pst never learned its rank; numbered rank 3"), std::string::npos);
  EXPECT_EQ(text.out.find("numbered rank 4"), std::string::npos) << text.out;
}

// The plan of that run suggests 4,5,4,3 layers; the run used its baseline, the uniform 4,4,4,4.
TEST(ReportCommand, PlanSplitComparesWithTheSuggestedOrTheBaselineSplitAndSaysWhich) {
  Dir out;
  const CommandResult plan = plan_h100_pp4_llama_1b();
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto planned = nlohmann::json::parse(plan.out);
  ASSERT_EQ(planned["baseline"], "uniform");
  std::vector<int> suggested_layers, uniform_layers;
  for (const auto& s : planned["suggested"]["stages"]) suggested_layers.push_back(s["layers"].get<int>());
  for (const auto& s : planned["uniform"]["stages"]) uniform_layers.push_back(s["layers"].get<int>());
  ASSERT_EQ(suggested_layers, (std::vector<int>{4, 5, 4, 3}));
  ASSERT_EQ(uniform_layers, (std::vector<int>{4, 4, 4, 4}));
  const std::string plan_file = out.file("plan.json");
  std::ofstream(plan_file) << plan.out;

  const CommandResult suggested = run_pipescope({"report", kH100Pp4Trace, "--plan", plan_file, "--json"});
  ASSERT_EQ(suggested.exit_code, 0) << suggested.err;
  const auto by_suggested = nlohmann::json::parse(suggested.out)["plan"];
  EXPECT_EQ(by_suggested["plan_side"], "suggested");
  EXPECT_TRUE(has_text(by_suggested["notes"], "compared with the plan's suggested split"));
  const CommandResult baseline =
      run_pipescope({"report", kH100Pp4Trace, "--plan", plan_file, "--plan-split", "baseline", "--json"});
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  const auto by_baseline = nlohmann::json::parse(baseline.out)["plan"];
  EXPECT_EQ(by_baseline["plan_side"], "uniform");
  EXPECT_TRUE(has_text(by_baseline["notes"],
                       "compared with the plan's baseline (--plan-split baseline): the uniform split"));
  EXPECT_FALSE(has_text(by_baseline["notes"], "suggested"));
  // Stage 1 with 5 layers (the suggested split) is planned to hold more than with 4; the measured
  // side is the same run either way.
  const auto& stage0 = by_baseline["stages"][0];
  EXPECT_LT(by_baseline["stages"][1]["predicted_peak_memory_bytes"].get<double>(),
            by_suggested["stages"][1]["predicted_peak_memory_bytes"].get<double>());
  // Less the CUDA context, which the traces cannot see, and NCCL's buffers, which this run (gloo
  // between its stages) never allocated.
  const double context = planned["memory_overheads"]["cuda_context_bytes"].get<double>() +
                         planned["memory_overheads"]["nccl_buffer_bytes"].get<double>();
  EXPECT_GT(planned["memory_overheads"]["nccl_buffer_bytes"].get<double>(), 0);
  EXPECT_EQ(stage0["predicted_peak_memory_bytes"].get<double>(),
            planned["uniform"]["stages"][0]["peak_memory_bytes"].get<double>() - context);
  EXPECT_EQ(by_suggested["stages"][0]["predicted_peak_memory_bytes"].get<double>(),
            planned["suggested"]["stages"][0]["peak_memory_bytes"].get<double>() - context);
  EXPECT_TRUE(has_text(by_baseline["notes"], "planned peak memory less the plan's CUDA context"));
  EXPECT_TRUE(has_text(by_baseline["notes"], "no rank opened a communicator"));
  EXPECT_EQ(stage0["measured_peak_memory_bytes"], by_suggested["stages"][0]["measured_peak_memory_bytes"]);
  EXPECT_EQ(by_baseline["predicted_step_s"].get<double>(), planned["uniform"]["iteration_s"].get<double>());
  const CommandResult text =
      run_pipescope({"report", kH100Pp4Trace, "--plan", plan_file, "--plan-split", "baseline"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("note: compared with the plan's baseline"), std::string::npos) << text.out;

  // A plan made with --split has that split as its baseline, and the note says so.
  CommandResult given =
      run_pipescope({"plan",  "--model",   std::string(PIPESCOPE_SOURCE_DIR) + "/examples/llama-1b.json",
                     "--gpu", "h100-80gb", "--gpus",
                     "4",     "--tp",      "1",
                     "--pp",  "4",         "--mbs",
                     "1",     "--gbs",     "8",
                     "--seq", "4096",      "--recompute",
                     "none",  "--split",   "5,4,4,3",
                     "--json"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  std::ofstream(out.file("given.json")) << given.out;
  const CommandResult by_given = run_pipescope(
      {"report", kH100Pp4Trace, "--plan", out.file("given.json"), "--plan-split", "baseline", "--json"});
  ASSERT_EQ(by_given.exit_code, 0) << by_given.err;
  const auto given_plan = nlohmann::json::parse(by_given.out)["plan"];
  EXPECT_EQ(given_plan["plan_side"], "given_split");
  EXPECT_TRUE(has_text(given_plan["notes"], "the split given with 'pipescope plan --split'"));

  expect_bad_input(run_pipescope({"report", kH100Pp4Trace, "--plan", plan_file, "--plan-split", "uniform"}),
                   "--plan-split");
  expect_bad_input(run_pipescope({"report", kH100Pp4Trace, "--plan-split", "baseline"}),
                   "--plan-split needs --plan");
  std::ofstream(out.file("no-baseline.json")) << R"({"schema_version": 1, "suggested": {"stages": []}})";
  expect_bad_input(run_pipescope({"report", kH100Pp4Trace, "--plan", out.file("no-baseline.json"),
                                  "--plan-split", "baseline"}),
                   "uniform.stages");
}

TEST(ReportCommand, HtmlIsOneSelfContainedFile) {
  Dir dir;
  write_run(dir);
  const std::string html = dir.file("report.html");
  const CommandResult r = run_pipescope({"report", dir.path(), "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(html);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  size_t svgs = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++svgs;
  size_t closes = 0;
  for (size_t at = page.find("</svg>"); at != std::string::npos; at = page.find("</svg>", at + 1)) ++closes;
  EXPECT_GE(svgs, 5u);  // breakdown, busy, memory per stage, memory over time, timeline excerpt
  EXPECT_EQ(svgs, closes);
  // Nothing fetched: the only URL is the SVG namespace.
  std::string rest = page;
  for (size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;) rest.erase(at, 26);
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
  EXPECT_EQ(rest.find("<script"), std::string::npos);
  EXPECT_NE(page.find("&lt;"), std::string::npos);  // kernel names with template brackets, escaped
}

// A trace cut short (a process killed, a copy interrupted) holds host records up to the cut, but
// its GPU records reach the file up to the reorder window late: the GPU figures stop that long
// before the last GPU record, say so, and are not measured when what is left holds no whole step
// (cut at 100 KB the H200 trace's GPU records end inside its first, warm-up step: "idle 79%").
TEST(ReportCommand, ATraceNotClosedLeavesItsUnflushedTailOutOfTheGpuFigures) {
  const std::string whole = slurp(kH200Trace + "/rank-x.960.pst");
  for (const size_t bytes : {size_t{100'000}, size_t{700'000}}) {
    Dir dir;
    std::ofstream(dir.file("rank-x.960.pst"), std::ios::binary) << whole.substr(0, bytes);
    const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    const auto& gpu = doc["ranks"][0]["gpu"];
    EXPECT_TRUE(has_text(doc["warnings"], "trace not closed: its GPU figures stop 3 s (the reorder window)"))
        << doc["warnings"].dump();
    // Left out: at least the reorder window, from the last host record back.
    EXPECT_GE(gpu["unflushed_tail_ns"].get<double>(), 3e9);
    const double host_ns =
        doc["ranks"][0]["last_event_ns"].get<double>() - doc["ranks"][0]["first_event_ns"].get<double>();
    EXPECT_LT(gpu["span_ns"].get<double>() + gpu["unflushed_tail_ns"].get<double>(), host_ns + 1);
    EXPECT_TRUE(doc["stages"][0]["gpu_ns_per_microbatch"].is_null());
    if (bytes == 100'000) {
      EXPECT_FALSE(gpu["shares_measured"].get<bool>());
      EXPECT_TRUE(gpu["idle_ns"].is_null());
      EXPECT_TRUE(gpu["compute_ns"].is_null());
      EXPECT_FALSE(has_text(doc["findings"], "GPU time: compute")) << doc["findings"].dump();
      EXPECT_TRUE(has_text(doc["warnings"], "covers no whole step, so its GPU shares are not measured"));
      const CommandResult text = run_pipescope({"report", dir.path()});
      EXPECT_NE(text.out.find("       -       -       -     -     -"), std::string::npos) << text.out;
    } else {
      EXPECT_TRUE(gpu["shares_measured"].get<bool>());
      EXPECT_GT(gpu["compute_ns"].get<double>(), 0);
      EXPECT_TRUE(has_text(doc["findings"], "GPU time: compute")) << doc["findings"].dump();
    }
  }
  // A closed trace has no tail to leave out.
  const CommandResult closed = run_pipescope({"report", kH200Trace, "--json"});
  ASSERT_EQ(closed.exit_code, 0) << closed.err;
  const auto closed_doc = nlohmann::json::parse(closed.out);
  EXPECT_EQ(closed_doc["ranks"][0]["gpu"]["unflushed_tail_ns"], 0);
  EXPECT_TRUE(closed_doc["ranks"][0]["gpu"]["shares_measured"].get<bool>());
  // One rank: no collective to align clocks on, so the skew left after alignment is not measured.
  EXPECT_EQ(closed_doc["clock"]["source"], "anchors");
  EXPECT_TRUE(closed_doc["clock"]["residual_median_ns"].is_null());
  EXPECT_TRUE(closed_doc["clock"]["residual_max_ns"].is_null());
  const CommandResult closed_text = run_pipescope({"report", kH200Trace});
  EXPECT_NE(closed_text.out.find("residual skew not measured"), std::string::npos) << closed_text.out;
}

TEST(ReportCommand, ReadsPyTorchProfilerTraces) {
  Dir dir;
  for (const char* name : {"rank-0.json.gz", "rank-1.json.gz"})
    fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/" + name, dir.file(name));
  const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source_format"], "kineto");
  EXPECT_EQ(doc["run_id"], "kineto:nccl:128");
  // Its uneven all-to-all (split sizes) is no desync: an all-to-all's sizes may differ.
  EXPECT_TRUE(doc["hang"]["desyncs"].empty()) << doc["hang"]["desyncs"];
  ASSERT_EQ(doc["ranks"].size(), 2u);
  EXPECT_EQ(doc["missing_ranks"].size(), 126u);
  EXPECT_EQ(doc["steps"]["source"], "nvtx");  // ProfilerStep#551, #552
  EXPECT_EQ(doc["steps"]["count"], 2);
  EXPECT_TRUE(doc["ranks"][0]["gpu"]["captured"].get<bool>());
  // No memory records: the peak is not measured (null), not 0; NCCL calls were, p2p time with them.
  EXPECT_EQ(doc["ranks"][0]["memory_figure"], "none");
  EXPECT_TRUE(doc["ranks"][0]["peak_memory_bytes"].is_null());
  EXPECT_TRUE(doc["ranks"][0]["peak_memory_at_ns"].is_null());
  EXPECT_TRUE(doc["ranks"][0]["p2p_ns"].is_number());
  // 2 of 128 ranks traced: no collective instance that every member reached, so how long they
  // waited for the others is not measured; one timed step has no spread.
  EXPECT_TRUE(doc["ranks"][0]["collective_wait_ns"].is_null());
  EXPECT_EQ(doc["steps"]["step_ns"].size(), 1u);
  EXPECT_TRUE(doc["steps"]["stdev_ns"].is_null());
  // The send/recv kernel of the all-to-alls takes most of the GPU's time, waiting included: the
  // findings say so, and that GEMM and elementwise work is not where this run's time goes.
  EXPECT_TRUE(has_text(doc["findings"],
                       "one kernel takes 61% of the GPU's kernel and copy time (nccl, 20 launches; "
                       "its time includes waiting for the other ranks): ncclKernel_SendRecv"))
      << doc["findings"].dump();
  EXPECT_FALSE(has_text(doc["findings"], "memory-bound (elementwise) kernels take"))
      << doc["findings"].dump();
  // nccl-tests' sizes, counted here from the c10d operators' (output, input) dims: the all-to-all
  // moves the larger of its two buffers over 128 ranks; the all-gather's output is 64 times its
  // input, so it ran on a 64-rank group, not the world.
  const std::map<std::string, double> element_bytes = {
      {"long", 8}, {"int", 4}, {"unsigned char", 1}, {"signed char", 1}};
  double all_to_all_bytes = 0, all_gather_bytes = 0;  // the mean over the two ranks
  for (const char* name : {"rank-0.json.gz", "rank-1.json.gz"}) {
    const auto trace = read_gz_json(dir.file(name));
    for (const auto& e : trace["traceEvents"]) {
      const std::string op = e.value("name", "");
      if (e.value("cat", "") != "cpu_op" || (op != "c10d::alltoall_base_" && op != "c10d::_allgather_base_"))
        continue;
      const double element = element_bytes.at(e["args"]["Input type"][0].get<std::string>());
      const double out = e["args"]["Input Dims"][0][0].get<double>() * element;
      const double in = e["args"]["Input Dims"][1][0].get<double>() * element;
      (op == "c10d::alltoall_base_" ? all_to_all_bytes : all_gather_bytes) += std::max(in, out) / 2;
    }
  }
  int checked = 0;
  for (const auto& row : doc["nccl"]) {
    const double algbw = row["algbw_bytes_per_s"].get<double>();
    const double busbw = row["busbw_bytes_per_s"].get<double>();
    EXPECT_NEAR(algbw, row["bytes"].get<double>() / (row["time_ns"].get<double>() * 1e-9), algbw * 1e-9);
    if (row["op"] == "all_to_all") {
      ++checked;
      EXPECT_EQ(row["comm_size"], 128);
      EXPECT_NEAR(row["bytes"].get<double>(), all_to_all_bytes, 4 * 128);  // a share per peer, rounded
      EXPECT_NEAR(busbw / algbw, 127.0 / 128, 1e-9);
      EXPECT_LT(busbw, 10e9);                // 4 GB/s; reading the whole buffer as one peer's share gave 492
    } else if (row["op"] == "all_gather") {  // a row per rank: the trace names no other member
      ++checked;
      EXPECT_EQ(row["comm_size"], 64);
      EXPECT_NEAR(row["bytes"].get<double>(), all_gather_bytes, 64);
      EXPECT_NEAR(busbw / algbw, 63.0 / 64, 1e-9);
    }
  }
  EXPECT_EQ(checked, 3);
  EXPECT_FALSE(fs::exists(dir.file("kineto-0.pst")));  // the user's directory is left alone
  // Files are named as the user knows them, not by their temporary conversions.
  EXPECT_EQ(doc["files"][0]["path"], dir.file("rank-0.json.gz"));
  EXPECT_EQ(doc["files"][1]["path"], dir.file("rank-1.json.gz"));
  const std::string db = dir.file("kineto.sqlite");
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", db}).exit_code, 0);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT path FROM ranks ORDER BY rank", -1, &s, nullptr), SQLITE_OK);
  std::vector<std::string> paths;
  while (sqlite3_step(s) == SQLITE_ROW)
    paths.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  sqlite3_close(raw);
  EXPECT_EQ(paths, (std::vector<std::string>{dir.file("rank-0.json.gz"), dir.file("rank-1.json.gz")}));
}

TEST(ReportCommand, ACutOffKinetoTraceIsCalledTruncated) {
  Dir dir;
  const std::string whole = slurp(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-1.json.gz");
  fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-0.json.gz",
                dir.file("rank-0.json.gz"));
  std::ofstream(dir.file("rank-1.json.gz"), std::ios::binary) << whole.substr(0, whole.size() * 3 / 4);
  const CommandResult r = run_pipescope({"report", dir.path()});
  expect_bad_input(r, "rank-1.json.gz is truncated");
}

// Plain JSON read in windows: a document on one line (no line breaks to cut at) reads as the
// gzip'ed original does; one cut or damaged in the middle of its events is refused in one line.
TEST(ReportCommand, PlainKinetoJsonIsReadWholeOrRefusedMidFile) {
  const std::string source = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-1.json.gz";
  const std::string minified = read_gz_json(source).dump();
  ASSERT_GT(minified.size(), 1u << 20);  // more than one of the reader's windows
  Dir original, one_line;
  fs::copy_file(source, original.file("rank-1.json.gz"));
  std::ofstream(one_line.file("rank-1.json")) << minified;
  const CommandResult a = run_pipescope({"report", original.path(), "--json"});
  const CommandResult b = run_pipescope({"report", one_line.path(), "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["ranks"], nlohmann::json::parse(b.out)["ranks"]);

  Dir cut, damaged;
  std::ofstream(cut.file("rank-1.json")) << minified.substr(0, minified.size() / 2);
  expect_bad_input(run_pipescope({"report", cut.path()}), "rank-1.json is not JSON");
  std::string broken = minified;
  const size_t event = broken.find("},{", broken.size() / 2);
  ASSERT_NE(event, std::string::npos);
  broken[event] = ']';
  std::ofstream(damaged.file("rank-1.json")) << broken;
  expect_bad_input(run_pipescope({"report", damaged.path()}), "rank-1.json is not JSON");
}

TEST(ReportCommand, RefusesADirectoryOfBothKindsOfTrace) {
  Dir dir;
  write_run(dir, synthetic::with_layout(1, 2, 1));
  fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-0.json.gz",
                dir.file("rank-0.json.gz"));
  expect_bad_input(run_pipescope({"report", dir.path()}), "keep one kind per directory");
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", dir.file("x.sqlite")}),
                   "rank-0.json.gz");
}

// A trace file named by itself is read as a run of that one trace, as `inspect` reads files.
TEST(ReportCommand, OneTraceFileIsReadLikeADirectoryOfIt) {
  const std::string file = kH200Trace + "/rank-x.960.pst";
  const CommandResult one = run_pipescope({"report", file, "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CommandResult all = run_pipescope({"report", kH200Trace, "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto a = nlohmann::json::parse(one.out);
  auto b = nlohmann::json::parse(all.out);
  EXPECT_EQ(a["files"][0]["path"], file);  // the user's file, not a private link to it
  EXPECT_EQ(a["dir"], file);
  EXPECT_EQ(a["ranks"], b["ranks"]);
  EXPECT_EQ(a["kernel_categories"], b["kernel_categories"]);
  Dir out;
  const CommandResult exported =
      run_pipescope({"export", file, "--format", "perfetto", "-o", out.file("one.json")});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(fs::exists(out.file("one.json")));
}

TEST(ReportCommand, BadInputIsOneLineAndExit2) {
  Dir empty;
  expect_bad_input(run_pipescope({"report", empty.path()}), "no *.pst traces");

  // A process that created its file and was killed before the first flush left 0 bytes.
  Dir zero;
  std::ofstream(zero.file("rank-3.4242.pst")).flush();
  expect_bad_input(
      run_pipescope({"report", zero.path()}),
      "holds only empty *.pst traces (1, e.g. rank-3.4242.pst): their processes created the file and "
      "ended before writing it");
  // Header-only traces: nothing recorded, which is not "nothing stands out".
  Dir headers;
  const std::string whole = slurp(kH200Trace + "/rank-x.960.pst");
  std::ofstream(headers.file("rank-0.960.pst"), std::ios::binary) << whole.substr(0, 72);
  expect_bad_input(run_pipescope({"report", headers.path()}), "1 trace(s), none holding a record");
  // A file that is no trace of either kind.
  std::ofstream(zero.file("notes.txt")) << "hello\n";
  expect_bad_input(
      run_pipescope({"report", zero.file("notes.txt")}),
      "notes.txt is neither a pipescope trace (*.pst) nor a PyTorch profiler (Kineto) JSON trace");
  expect_bad_input(run_pipescope({"report", zero.file("missing.pst")}), "missing.pst");

  Dir foreign;
  write_run(foreign);
  std::ofstream(foreign.file("notes.pst")) << "these are not trace bytes, just a text file named .pst\n";
  expect_bad_input(run_pipescope({"report", foreign.path()}), "notes.pst is not a readable pipescope trace");

  Dir mixed;
  synthetic::SyntheticRunSpec a = synthetic::with_layout(1, 2, 1);
  a.run_id = "job-a";
  write_run(mixed, a);
  Dir other;
  synthetic::SyntheticRunSpec b = a;
  b.run_id = "job-b";
  write_run(other, b);
  for (const auto& entry : fs::directory_iterator(other.path()))
    fs::copy_file(entry.path(), mixed.file("b-" + entry.path().filename().string()));
  const CommandResult both = run_pipescope({"report", mixed.path()});
  expect_bad_input(both, "--run");
  EXPECT_NE(both.err.find("job-a"), std::string::npos);
  EXPECT_NE(both.err.find("job-b"), std::string::npos);
  const CommandResult picked = run_pipescope({"report", mixed.path(), "--run", "job-b", "--json"});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(nlohmann::json::parse(picked.out)["run_id"], "job-b");
  expect_bad_input(run_pipescope({"report", mixed.path(), "--run", "job-c"}), "job-c");

  Dir twice;
  write_run(twice, a);
  for (const auto& entry : fs::directory_iterator(twice.path())) {
    if (entry.path().filename().string().starts_with("rank-0."))
      fs::copy_file(entry.path(), twice.file("copy-of-rank-0.pst"));
  }
  expect_bad_input(run_pipescope({"report", twice.path()}), "rank 0 has two traces");

  Dir plan;
  write_run(plan, a);
  std::ofstream(plan.file("plan.json")) << "{\"not\": \"a plan\"}";
  expect_bad_input(run_pipescope({"report", plan.path(), "--plan", plan.file("plan.json")}), "plan.json");
  std::ofstream(plan.file("cut.json")) << "{\"schema_version\": 3, \"uniform\": {";
  expect_bad_input(
      run_pipescope({"report", plan.path(), "--plan", plan.file("cut.json")}),
      "cut.json: not valid JSON (syntax error at byte 35) (expected 'pipescope plan --json' output)");
}

TEST(ReportCommand, TruncatedTraceIsUsedAsFarAsItGoes) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.kernels_per_microbatch = 64;  // several chunks per trace
  write_run(dir, spec);
  std::string victim;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    if (entry.path().filename().string().starts_with("rank-3.")) victim = entry.path().string();
  fs::resize_file(victim, fs::file_size(victim) / 2);
  const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["files"][3]["stop"], "truncated");
  EXPECT_LT(doc["files"][3]["valid_bytes"].get<uint64_t>(), doc["files"][3]["total_bytes"].get<uint64_t>());
  bool warned = false;
  for (const auto& w : doc["warnings"])
    warned |= w.get<std::string>().find("rank 3: trace truncated") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(doc["layout"]["pp"], 4);
}

TEST(ReportCommand, ARankCutInItsFirstBytesIsNamedAndTheRunStillReported) {
  Dir dir;
  write_run(dir);
  const std::string victim = trace_of_rank(dir, 5);
  const std::string name = fs::path(victim).filename().string();
  const std::string whole = slurp(victim);
  for (const size_t cut : {size_t{10}, size_t{150}}) {
    std::ofstream(victim, std::ios::binary | std::ios::trunc) << whole.substr(0, cut);
    const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["run_id"], "synthetic");
    std::string said;
    for (const auto& w : doc["warnings"])
      if (w.get<std::string>().find(name) != std::string::npos) said = w;
    // 10 bytes: not even a header, left out (rank 5 missing); 150: a header and a clock anchor,
    // no process info: taken as rank 5 of the only run.
    EXPECT_NE(said.find(cut == 10 ? "skipped: trace header cut short" : "names no run"), std::string::npos)
        << said;
    EXPECT_EQ(doc["ranks"].size(), cut == 10 ? 15u : 16u);
    EXPECT_EQ(doc["missing_ranks"].size(), cut == 10 ? 1u : 0u);
  }
}

TEST(ReportCommand, AttemptPicksOneRestartOfTheRun) {
  Dir dir, restart;
  const synthetic::SyntheticRunSpec first = synthetic::with_layout(1, 2, 1);
  write_run(dir, first);
  synthetic::SyntheticRunSpec second = first;
  second.attempt = 1;
  second.steps = 2;  // the restart ran 2 steps
  write_run(restart, second);
  for (const auto& entry : fs::directory_iterator(restart.path()))
    fs::copy_file(entry.path(), dir.file("restart-" + entry.path().filename().string()));

  // Without --attempt: the latest attempt, with the earlier one's failure class first (none here).
  const CommandResult both = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const auto latest = nlohmann::json::parse(both.out);
  EXPECT_EQ(latest["attempt"], 1);
  ASSERT_EQ(latest["earlier_attempts"].size(), 1u);
  EXPECT_EQ(latest["earlier_attempts"][0]["attempt"], 0);
  EXPECT_TRUE(latest["earlier_attempts"][0]["failure"].is_null());
  EXPECT_TRUE(latest["findings"][0].get<std::string>().starts_with(
      "attempt 0 (before this one, attempt 1): the traces show no failure"))
      << latest["findings"][0];
  // export still asks which.
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", dir.file("both.json")}),
                   "--attempt N");
  for (const int attempt : {0, 1}) {
    const CommandResult r =
        run_pipescope({"report", dir.path(), "--attempt", std::to_string(attempt), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["attempt"], attempt);
    EXPECT_EQ(doc["steps"]["count"], attempt == 0 ? 3 : 2);
    for (const auto& f : doc["files"]) {
      EXPECT_EQ(fs::path(f["path"].get<std::string>()).filename().string().starts_with("restart-"),
                attempt == 1);
    }
  }
  expect_bad_input(run_pipescope({"report", dir.path(), "--attempt", "2"}), "--attempt 2");
  const CommandResult exported = run_pipescope(
      {"export", dir.path(), "--format", "perfetto", "--attempt", "1", "-o", dir.file("a1.json")});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
}

// A failed attempt and its restart in one directory: each attempt diagnosed on its own.
TEST(ReportCommand, AFailedAttemptBeforeTheRestartLeadsTheFindings) {
  Dir dir, restart;
  synthetic::SyntheticRunSpec first = synthetic::with_layout(1, 2, 2);
  first.endings.push_back(synthetic::SyntheticRunSpec::RankEnding{1, 0, 0, 11 /* SIGSEGV */, -1});
  write_run(dir, first);
  synthetic::SyntheticRunSpec second = synthetic::with_layout(1, 2, 2);
  second.attempt = 1;
  write_run(restart, second);
  for (const auto& entry : fs::directory_iterator(restart.path()))
    fs::copy_file(entry.path(), dir.file("restart-" + entry.path().filename().string()));
  const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["attempt"], 1);
  EXPECT_TRUE(doc["failure"].is_null());
  ASSERT_EQ(doc["earlier_attempts"].size(), 1u);
  EXPECT_EQ(doc["earlier_attempts"][0]["failure"]["kind"], "fatal signal");
  EXPECT_EQ(doc["earlier_attempts"][0]["failure"]["rank"], 1);
  EXPECT_EQ(doc["earlier_attempts"][0]["failure"]["code"], 11);
  const CommandResult text = run_pipescope({"report", dir.path()});
  EXPECT_NE(text.out.find(
                "attempt 0 (before this one, attempt 1): failure (fatal signal): rank 1 ended by SIGSEGV"),
            std::string::npos)
      << text.out;
  const CommandResult alone = run_pipescope({"report", dir.path(), "--attempt", "0", "--json"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(nlohmann::json::parse(alone.out)["failure"]["kind"], "fatal signal");
}

TEST(ReportCommand, ACorruptChunkInTheMiddleIsUsedUpToItAndSaidSo) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.kernels_per_microbatch = 64;  // several chunks per trace
  write_run(dir, spec);
  const std::string victim = trace_of_rank(dir, 6);
  std::string bytes = slurp(victim);
  // The chunk header magic "PSCK" of a chunk about half-way: the reader stops there.
  const size_t chunk = bytes.find("PSCK", bytes.size() / 2);
  ASSERT_NE(chunk, std::string::npos);
  bytes[chunk + 30] = static_cast<char>(bytes[chunk + 30] ^ 0x5a);  // in its payload: checksum mismatch
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;
  const CommandResult r = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["files"][6]["stop"], "corrupt");
  EXPECT_EQ(doc["files"][6]["valid_bytes"], chunk);
  EXPECT_EQ(doc["files"][6]["total_bytes"], bytes.size());
  const std::string said = "rank 6: trace corrupt after " + std::to_string(chunk) + " of " +
                           std::to_string(bytes.size()) + " bytes";
  bool warned = false;
  for (const auto& w : doc["warnings"]) warned |= w.get<std::string>().find(said) != std::string::npos;
  EXPECT_TRUE(warned) << said;
  EXPECT_EQ(doc["layout"]["pp"], 4);  // what came before the damage still shows the layout
}

TEST(ReportCommand, PlanFromPipescopePlanIsComparedStageByStage) {
  Dir dir;
  write_run(dir);  // tp 2 x pp 4 x dp 2, 8 micro-batches of 2 ms forward, 4 ms backward per stage
  const std::string plan_file = dir.file("plan.json");
  const CommandResult plan =
      run_pipescope({"plan", "--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "2",
                     "--pp", "4", "--mbs", "1", "--gbs", "16", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::ofstream(plan_file) << plan.out;
  const auto plan_doc = nlohmann::json::parse(plan.out);
  const auto& planned = plan_doc["suggested"];
  const double context = plan_doc["memory_overheads"]["cuda_context_bytes"].get<double>();

  const CommandResult r = run_pipescope({"report", dir.path(), "--plan", plan_file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& cmp = doc["plan"];
  EXPECT_EQ(cmp["plan_path"], plan_file);
  EXPECT_EQ(cmp["memory_figure"], "reserved");  // the traces' cudaMalloc-style records
  // Its 16 ranks name no GPU UUID: no GPU is said to be shared.
  EXPECT_FALSE(has_text(doc["warnings"], "ran their kernels on one GPU"));
  // Its ranks opened NCCL communicators: their buffers stay in the planned peak.
  EXPECT_TRUE(has_text(cmp["notes"], "planned peak memory less the plan's CUDA context"));
  EXPECT_FALSE(has_text(cmp["notes"], "NCCL buffers"));
  ASSERT_EQ(cmp["stages"].size(), 4u);
  for (int s = 0; s < 4; ++s) {
    const auto& c = cmp["stages"][static_cast<size_t>(s)];
    const auto& p = planned["stages"][static_cast<size_t>(s)];
    EXPECT_EQ(c["stage"], s);
    EXPECT_DOUBLE_EQ(c["predicted_peak_memory_bytes"].get<double>(),
                     p["peak_memory_bytes"].get<double>() - context);
    EXPECT_DOUBLE_EQ(c["predicted_forward_s"].get<double>(), p["forward_s"].get<double>());
    EXPECT_DOUBLE_EQ(c["predicted_backward_s"].get<double>(), p["backward_s"].get<double>());
    // 1F1B: stage s holds 4 - s micro-batches of 256 MiB on top of 8 GiB of static memory.
    EXPECT_DOUBLE_EQ(c["measured_peak_memory_bytes"].get<double>(),
                     double((8ull << 30) + (4 - s) * (256ull << 20)));
    EXPECT_DOUBLE_EQ(c["measured_forward_s"].get<double>(), 0.002);
    EXPECT_DOUBLE_EQ(c["measured_backward_s"].get<double>(), 0.004);
  }
  EXPECT_DOUBLE_EQ(cmp["predicted_step_s"].get<double>(), planned["iteration_s"].get<double>());
  EXPECT_DOUBLE_EQ(cmp["predicted_bubble_fraction"].get<double>(), planned["bubble_fraction"].get<double>());
  EXPECT_DOUBLE_EQ(cmp["measured_step_s"].get<double>(), doc["steps"]["median_ns"].get<double>() * 1e-9);
  const CommandResult text = run_pipescope({"report", dir.path(), "--plan", plan_file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("planned vs measured (" + plan_file + "; memory figure: reserved)"),
            std::string::npos);
}

// An interleaved plan (schema 2: a layout and each stage's chunks) is compared stage by stage too:
// a stage's figures are those of all its chunks.
TEST(ReportCommand, AnInterleavedPlanIsComparedStageByStage) {
  Dir dir;
  write_run(dir);  // tp 2 x pp 4 x dp 2, 8 micro-batches
  const std::string plan_file = dir.file("plan.json");
  const CommandResult plan = run_pipescope({"plan",
                                            "--model",
                                            "llama2-7b",
                                            "--gpu",
                                            "a100-80gb",
                                            "--gpus",
                                            "16",
                                            "--tp",
                                            "2",
                                            "--pp",
                                            "4",
                                            "--vpp",
                                            "2",
                                            "--mbs",
                                            "1",
                                            "--gbs",
                                            "16",
                                            "--pipeline-layout",
                                            "Et*3|(t*4|)*6t*5L",
                                            "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::ofstream(plan_file) << plan.out;
  const auto plan_doc = nlohmann::json::parse(plan.out);
  EXPECT_EQ(plan_doc["schema_version"], 3);
  EXPECT_EQ(plan_doc["uniform"]["layout"], "Et*3|(t*4|)*6t*5L");
  const CommandResult r =
      run_pipescope({"report", dir.path(), "--plan", plan_file, "--plan-split", "baseline", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& cmp = doc["plan"];
  ASSERT_EQ(cmp["stages"].size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    const auto& p = plan_doc["uniform"]["stages"][s];
    EXPECT_EQ(p["chunk_layers"].size(), 2u);
    EXPECT_DOUBLE_EQ(cmp["stages"][s]["predicted_forward_s"].get<double>(), p["forward_s"].get<double>());
  }
  EXPECT_DOUBLE_EQ(cmp["predicted_step_s"].get<double>(), plan_doc["uniform"]["iteration_s"].get<double>());
}

// A plan of another schema version, or one missing a figure the comparison needs, is refused
// naming what is wrong, rather than read as zeros.
TEST(ReportCommand, APlanOfAnotherVersionOrMissingAFigureIsRefused) {
  Dir dir;
  write_run(dir);
  const CommandResult plan =
      run_pipescope({"plan", "--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "16", "--tp", "2",
                     "--pp", "4", "--mbs", "1", "--gbs", "16", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto good = nlohmann::json::parse(plan.out);
  const auto refused = [&](const nlohmann::json& doc, const std::string& says) {
    const std::string file = dir.file("plan.json");
    std::ofstream(file, std::ios::trunc) << doc.dump();
    const CommandResult r = run_pipescope({"report", dir.path(), "--plan", file});
    EXPECT_EQ(r.exit_code, 2) << says << r.out;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  auto newer = good;
  newer["schema_version"] = 4;
  refused(newer, "has plan schema_version 4; this pipescope reads versions 1 to 3");
  auto no_forward = good;
  no_forward["suggested"]["stages"][1].erase("forward_s");
  refused(no_forward, "field 'suggested.stages[1].forward_s' is missing");
  auto no_step = good;
  no_step["suggested"].erase("iteration_s");
  refused(no_step, "field 'suggested.iteration_s' is missing");
}

TEST(ExportCommand, PerfettoJsonWithFlowsAndAWindow) {
  Dir dir;
  write_run(dir);
  const std::string out = dir.file("trace.json");
  const CommandResult r =
      run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", out, "--ranks", "0-3,8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(out));
  std::set<int> pids;
  std::multiset<uint64_t> sends, recvs;
  size_t kernels = 0, counters = 0, nvtx = 0;
  for (const auto& e : doc["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    const std::string ph = e["ph"];
    if (ph == "s") sends.insert(e["id"].get<uint64_t>());
    if (ph == "f") recvs.insert(e["id"].get<uint64_t>());
    if (ph == "X" && e.value("cat", "") == "kernel") ++kernels;
    if (ph == "C") ++counters;
    if (ph == "B") ++nvtx;
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3, 8}));
  EXPECT_GT(kernels, 0u);
  EXPECT_GT(counters, 0u);
  EXPECT_GT(nvtx, 0u);
  // Ranks 0-3 (stage 0) send to 4-7, which are not exported; rank 8 (stage 2) receives from 4.
  // So no arrow closes; with all ranks every send finds its recv.
  const CommandResult all = run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", out});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  sends.clear();
  recvs.clear();
  double last_ts = 0;
  std::map<uint64_t, double> sent_at;
  const auto whole = nlohmann::json::parse(slurp(out));
  for (const auto& e : whole["traceEvents"]) {
    if (e["ph"] == "s") sends.insert(e["id"].get<uint64_t>());
    if (e["ph"] == "s") sent_at[e["id"].get<uint64_t>()] = e["ts"].get<double>();
    if (e["ph"] == "f") recvs.insert(e["id"].get<uint64_t>());
    if (e["ph"] == "X") last_ts = std::max(last_ts, e["ts"].get<double>());
  }
  EXPECT_FALSE(sends.empty());
  EXPECT_EQ(sends, recvs);
  // On the aligned clocks every arrow points forward: from the send's call to the recv's end.
  for (const auto& e : whole["traceEvents"]) {
    if (e["ph"] == "f") {
      EXPECT_GE(e["ts"].get<double>(), sent_at[e["id"].get<uint64_t>()]);
    }
  }
  const CommandResult window =
      run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", out, "--window", "0.05:0.06"});
  ASSERT_EQ(window.exit_code, 0) << window.err;
  const auto cut = nlohmann::json::parse(slurp(out));
  for (const auto& e : cut["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double start_us = e["ts"].get<double>(), end_us = start_us + e["dur"].get<double>();
    EXPECT_GE(end_us, 50'000.0);
    EXPECT_LT(start_us, 60'000.0);
  }
  EXPECT_GT(last_ts, 60'000.0);  // the window cut something off
}

TEST(ExportCommand, SqliteTablesPerRecordKind) {
  Dir dir;
  write_run(dir);
  const std::string out = dir.file("trace.sqlite");
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", out}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
  auto scalar = [&](const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    int64_t v = -1;
    if (s != nullptr && sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM ranks"), 16);
  EXPECT_EQ(scalar("SELECT COUNT(DISTINCT rank) FROM kernel"), 16);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM nvtx WHERE event = 1"), 16 * 3 * (1 + 16));  // steps + ranges
  EXPECT_EQ(scalar("SELECT MIN(start_ns) FROM kernel") >= 0, true);                   // on the common clock
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM nccl_comm WHERE comm_rank >= size"), 0);
  EXPECT_EQ(scalar("SELECT value FROM meta WHERE key = 'schema_version'"), 2);
  EXPECT_GT(scalar("SELECT COUNT(*) FROM strings s JOIN kernel k ON s.rank = k.rank AND s.id = k.name_id"),
            0);
  sqlite3_close(db);
  // Replacing an earlier export is fine; a file that is not one is refused.
  EXPECT_EQ(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", out}).exit_code, 0);
  std::ofstream(dir.file("precious.db")) << "user data";
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", dir.file("precious.db")}),
                   "not a pipescope export");
  EXPECT_EQ(slurp(dir.file("precious.db")), "user data");
}

// Rows of a query, each row's columns as text ("NULL" for NULL).
std::vector<std::vector<std::string>> rows_of(sqlite3* db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db) << "\n"
                                                                             << sql;
  while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
      row.emplace_back(text != nullptr ? text : "NULL");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(s);
  return rows;
}

// The statements of every ```sql block of a Markdown file.
std::vector<std::string> sql_in(const std::string& markdown) {
  std::vector<std::string> statements;
  for (size_t at = markdown.find("```sql\n"); at != std::string::npos; at = markdown.find("```sql\n", at)) {
    at += 7;
    const size_t end = markdown.find("```", at);
    std::string block = markdown.substr(at, end - at);
    std::string statement;
    for (size_t line = 0; line < block.size();) {
      const size_t eol = block.find('\n', line);
      const std::string text = block.substr(line, eol - line);
      line = eol == std::string::npos ? block.size() : eol + 1;
      if (text.starts_with("--")) continue;
      statement += text + "\n";
      if (text.ends_with(";")) {
        statements.push_back(statement);
        statement.clear();
      }
    }
    at = end;
  }
  return statements;
}

TEST(ExportCommand, SqliteKnowsTheLayoutAndRunsTheDocumentedQueries) {
  Dir dir;
  write_run(dir);  // tp 2 x pp 4 x dp 2, Megatron order: rank = tp + 2 * (dp + 2 * stage)
  const std::string out = dir.file("trace.sqlite");
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", out}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
  const auto places = rows_of(db, "SELECT rank, stage, tp_rank, dp_rank FROM ranks ORDER BY rank");
  ASSERT_EQ(places.size(), 16u);
  for (int r = 0; r < 16; ++r) {
    const std::vector<std::string> expected = {std::to_string(r), std::to_string(r / 4),
                                               std::to_string(r % 2), std::to_string(r / 2 % 2)};
    EXPECT_EQ(places[static_cast<size_t>(r)], expected);
  }
  // 8 tensor pairs, 8 data pairs, 4 pipelines of 4 stages, the world.
  EXPECT_EQ(rows_of(db, "SELECT role, COUNT(*), SUM(size) FROM communicators GROUP BY role ORDER BY role"),
            (std::vector<std::vector<std::string>>{
                {"data", "8", "16"}, {"pipeline", "4", "16"}, {"tensor", "8", "16"}, {"world", "1", "16"}}));
  EXPECT_EQ(rows_of(db, "SELECT COUNT(*) FROM communicator_members"),
            (std::vector<std::vector<std::string>>{{"64"}}));
  EXPECT_EQ(rows_of(db, "SELECT members FROM communicators WHERE role = 'pipeline' AND members LIKE '1,%'"),
            (std::vector<std::vector<std::string>>{{"1,5,9,13"}}));
  EXPECT_EQ(rows_of(db,
                    "SELECT COUNT(*) FROM communicators c JOIN nccl_comm n ON n.comm_id = c.comm_id "
                    "WHERE printf('%016x', n.comm_id) != c.comm_id_hex"),
            (std::vector<std::vector<std::string>>{{"0"}}));

  const std::vector<std::string> queries =
      sql_in(slurp(std::string(PIPESCOPE_SOURCE_DIR) + "/docs/export.md"));
  ASSERT_GE(queries.size(), 7u);
  for (const std::string& q : queries) EXPECT_FALSE(rows_of(db, q).empty()) << q;
  // Two of them with answers known by construction: rank 5's tensor group is {4, 5}; stage s
  // holds 8 GiB of static memory and 4 - s micro-batches of 256 MiB of activations at its peak.
  for (const std::string& q : queries) {
    if (q.find("role = 'tensor'") != std::string::npos) {
      EXPECT_EQ(rows_of(db, q), (std::vector<std::vector<std::string>>{{"4"}, {"5"}}));
    }
    if (q.find("r.stage, MAX(level)") != std::string::npos) {
      const auto stages = rows_of(db, q);
      ASSERT_EQ(stages.size(), 4u);
      for (int st = 0; st < 4; ++st) {
        EXPECT_EQ(stages[static_cast<size_t>(st)],
                  (std::vector<std::string>{std::to_string(st),
                                            std::to_string((8ull << 30) + (4 - st) * (256ull << 20))}));
      }
    }
  }
  sqlite3_close(db);
}

TEST(ExportCommand, SqliteLeavesTheLayoutNullWhenNoneIsKnown) {
  Dir dir;
  write_run(dir, synthetic::with_layout(1, 1, 1));
  const std::string out = dir.file("one.sqlite");
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", out}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(rows_of(db, "SELECT rank, stage, tp_rank, dp_rank FROM ranks"),
            (std::vector<std::vector<std::string>>{{"0", "NULL", "NULL", "NULL"}}));
  sqlite3_close(db);
}

TEST(ReportCommand, NvtxOverridesNameTheRangesTheDefaultsMiss) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.step_range = "iter_boundary";
  spec.forward_range = "fprop";
  spec.backward_range = "bprop";
  write_run(dir, spec);
  const CommandResult plain = run_pipescope({"report", dir.path(), "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["steps"]["source"], "collectives");
  const CommandResult r = run_pipescope({"report", dir.path(), "--json", "--nvtx-step", "^iter_boundary$",
                                         "--nvtx-forward", "^fprop$", "--nvtx-backward", "^bprop$"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["steps"]["source"], "nvtx");
  EXPECT_EQ(doc["steps"]["count"], 3);
  EXPECT_EQ(doc["stages"][0]["source"], "nvtx");
  EXPECT_EQ(doc["stages"][0]["forward_mean_ns"], 2'000'000);
}

// The private directory a Kineto conversion works in goes with the command, also when a signal
// ends the command first: a Ctrl-C or a kill while it converts, a reader that closed the pipe.
// The command is started as from a terminal: the four signals at their default action.
pid_t start_report(const std::string& trace_dir, const std::string& tmpdir, int stdout_fd) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
    dup2(stdout_fd, STDOUT_FILENO);
    const int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDERR_FILENO);
    setenv("TMPDIR", tmpdir.c_str(), 1);
    execl(PIPESCOPE_CLI_PATH, PIPESCOPE_CLI_PATH, "report", trace_dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

bool holds_anything(const std::string& dir) { return !fs::is_empty(dir); }

TEST(ReportCommand, ASignalThatEndsAKinetoConversionTakesItsPrivateDirectoryAlong) {
  Dir traces, tmpdir;
  synthetic::KinetoTraceSpec spec;
  spec.json_bytes = 96'000'000;  // a tenth of a second or more to convert: the signal comes meanwhile
  ASSERT_TRUE(synthetic::write_kineto_trace(spec, traces.file("rank-0.json")).ok());
  const int null_fd = open("/dev/null", O_WRONLY);
  for (const int sig : {SIGINT, SIGTERM}) {
    // Signalled as soon as its private directory is there; tried again when the command finished
    // before the signal came (a loaded machine can keep this test waiting that long).
    bool caught = false;
    for (int attempt = 0; attempt < 5 && !caught; ++attempt) {
      const pid_t pid = start_report(traces.path(), tmpdir.path(), null_fd);
      ASSERT_GT(pid, 0);
      for (int waited_ms = 0; !holds_anything(tmpdir.path()) && waited_ms < 10'000; ++waited_ms)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      kill(pid, sig);
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      caught = WIFSIGNALED(status);
      if (caught) {
        EXPECT_EQ(WTERMSIG(status), sig);
      }
      EXPECT_FALSE(holds_anything(tmpdir.path())) << "signal " << sig << " left the private directory";
    }
    EXPECT_TRUE(caught) << "signal " << sig << ": the command ended before it came, five times";
  }
  close(null_fd);
}

TEST(ReportCommand, AReaderThatClosedThePipeTakesTheKinetoPrivateDirectoryAlong) {
  Dir traces, tmpdir;
  fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-0.json.gz",
                traces.file("rank-0.json.gz"));
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  close(pipe_fds[0]);  // `pipescope report DIR | head` with head gone before the report is printed
  const pid_t pid = start_report(traces.path(), tmpdir.path(), pipe_fds[1]);
  close(pipe_fds[1]);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGPIPE);
  EXPECT_FALSE(holds_anything(tmpdir.path()));
}

}  // namespace
}  // namespace pipescope::testing
