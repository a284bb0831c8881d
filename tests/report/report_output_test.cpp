// The renderings of a hand-built report: the JSON keys the issue names, the terminal order
// (findings first), escaping in HTML, and an empty report that still renders.
#include "pipescope/report/report_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace pipescope::report {
namespace {

using namespace analysis;  // NOLINT(google-build-using-namespace): the report's types

RunReport two_stage_run() {
  RunReport r;
  r.dir = "/runs/7";
  r.run_id = "job-7";
  r.layout = LayoutReport{"inferred", 4, 1, 2, 2, 1, 1, {{11, "pipeline", {0, 2}, {}}}, {}};
  for (int32_t rank = 0; rank < 4; ++rank) {
    RankReport k;
    k.rank = rank;
    k.stage = rank / 2;
    k.dp_rank = rank % 2;
    k.peak_memory_bytes = 1000 + static_cast<uint64_t>(rank);
    k.gpu = GpuBreakdown{true, false, 100, 60, 10, 5, 5, 25, 3, 0.75, 0};
    r.ranks.push_back(k);
  }
  for (int32_t stage = 0; stage < 2; ++stage) {
    StageReport s;
    s.stage = stage;
    s.ranks = 2;
    s.source = "nvtx";
    s.forward_mean_ns = 2'000'000;
    s.backward_mean_ns = 4'000'000;
    s.bubble_fraction = stage == 0 ? 0.3 : 0.1;
    s.peak_memory_bytes = (9ull - static_cast<uint64_t>(stage)) << 30;
    s.peak_activation_bytes = (2ull - static_cast<uint64_t>(stage)) << 30;
    s.activation_vs_last_stage = 2.0 - stage;
    r.stages.push_back(s);
  }
  r.stragglers = {Straggler{3, 6, 120'000'000, {"data"}}};
  r.kernels = {KernelStat{"void gemm<float, 128>(Params<a&b>)", "_Z4gemmIfLi128EEv6ParamsIaE", "gemm", 10,
                          1000, 100, 90, 120, 130, 140}};
  r.hang.suspected = true;
  r.hang.communicators = {CommHang{42, "data", 17, "all_reduce", {1}, {3}, 1'500'000'000, {}}};
  r.findings = {"layout (inferred): tp 1 x pp 2 x dp 2 on 4 ranks", "straggler: rank 3"};
  r.gpu_busy = Series{0, 1000, {0.5, 0.75}};
  r.memory_timelines = {MemoryTimeline{0, "reserved", Series{0, 1000, {1e9, 2e9}}, std::nullopt}};
  r.timeline_excerpt = {TimelineLane{0, 0, {{0, 1000, "step"}, {0, 400, "forward"}, {500, 900, "backward"}}}};
  return r;
}

TEST(ReportJson, CarriesTheKeysTheIssueNames) {
  const auto doc = nlohmann::json::parse(report_json(two_stage_run()));
  EXPECT_EQ(doc["schema_version"], kRunReportSchemaVersion);
  EXPECT_EQ(doc["layout"]["tp"], 1);
  EXPECT_EQ(doc["layout"]["pp"], 2);
  EXPECT_EQ(doc["layout"]["dp"], 2);
  EXPECT_EQ(doc["layout"]["zero_shard"], 1);
  ASSERT_EQ(doc["ranks"].size(), 4u);
  EXPECT_EQ(doc["ranks"][3]["rank"], 3);
  EXPECT_EQ(doc["ranks"][3]["stage"], 1);
  EXPECT_EQ(doc["ranks"][3]["tp_rank"], 0);
  EXPECT_EQ(doc["ranks"][3]["dp_rank"], 1);
  EXPECT_EQ(doc["ranks"][3]["peak_memory_bytes"], 1003);
  EXPECT_EQ(doc["stragglers"][0]["rank"], 3);
  EXPECT_EQ(doc["hang"]["communicators"][0]["missing"], nlohmann::json::array({3}));
  EXPECT_TRUE(doc["plan"].is_null());
}

TEST(ReportText, FindingsComeFirstThenTheTables) {
  std::ostringstream out;
  write_report_text(out, two_stage_run());
  const std::string text = out.str();
  const size_t findings = text.find("findings");
  EXPECT_LT(findings, text.find("hang / failure view"));
  EXPECT_LT(text.find("hang / failure view"), text.find("pipeline stages"));
  EXPECT_NE(text.find("never entered"), std::string::npos);
  EXPECT_NE(text.find("waited 1500.0 ms"), std::string::npos);
  EXPECT_NE(text.find("rank 3: last at 6 sampled collectives"), std::string::npos);
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
}

TEST(ReportOutputs, ARunWithoutAnIdIsSaidSoNotShownAsEmptyQuotes) {
  RunReport r = two_stage_run();
  std::ostringstream text;
  write_report_text(text, r);
  EXPECT_NE(text.str().find("(run 'job-7' attempt 0,"), std::string::npos) << text.str();
  r.run_id.clear();
  text.str("");
  write_report_text(text, r);
  EXPECT_NE(text.str().find("(no run id attempt 0,"), std::string::npos) << text.str();
  const std::string html = report_html(r);
  EXPECT_NE(html.find("<p>no run id, attempt 0"), std::string::npos);
  EXPECT_EQ(html.find("run ''"), std::string::npos);
}

TEST(ReportHtml, EscapesNamesAndFetchesNothing) {
  const std::string html = report_html(two_stage_run());
  EXPECT_EQ(html.find("<a&b>"), std::string::npos);
  EXPECT_NE(html.find("Params&lt;a&amp;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

// The widths of the bar segments drawn in the first row of the SVG after `heading`.
std::vector<double> first_bar(const std::string& html, const std::string& heading) {
  const size_t svg = html.find("<svg", html.find(heading));
  const size_t end = html.find("</svg>", svg);
  std::vector<double> widths;
  std::string first_y;
  for (size_t at = html.find("<rect ", svg); at < end; at = html.find("<rect ", at + 1)) {
    auto attribute = [&](const std::string& name) {
      const size_t from = html.find(name + "=\"", at) + name.size() + 2;
      return html.substr(from, html.find('"', from) - from);
    };
    if (first_y.empty()) first_y = attribute("y");
    if (attribute("y") == first_y && attribute("height") != "10.0")
      widths.push_back(std::stod(attribute("width")));
  }
  return widths;
}

TEST(ReportHtml, BreakdownBarsAreSharesThatAddUpToTheWholeSpan) {
  // Of a 100 ns span: compute 60 (5 of it hiding communication), exposed communication 10,
  // copies 5, idle 25; the bar is 640 px wide.
  const std::string html = report_html(two_stage_run());
  const std::vector<double> widths = first_bar(html, "<h2>GPU time per rank</h2>");
  ASSERT_EQ(widths.size(), 5u);
  const double expected[] = {0.55 * 640, 0.05 * 640, 0.10 * 640, 0.05 * 640, 0.25 * 640};
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR(widths[k], expected[k], 0.1) << k;
  EXPECT_NE(html.find("compute hiding communication"), std::string::npos);
}

TEST(ReportHtml, HasThePlanComparisonAndTheHangLists) {
  RunReport r = two_stage_run();
  r.hang.root_ranks = {3};
  r.hang.blocked = 1;
  r.hang.not_closed = {1, 3};
  r.hang.no_trace = {3};
  r.hang.p2p = {P2pHang{2, 3, "recv", 2'000'000'000}};
  PlanComparison plan;
  plan.plan_path = "plan.json";
  plan.memory_figure = "reserved";
  plan.stages = {PlanStageComparison{0,
                                     {10.0 * (1u << 30), 9.0 * (1u << 30), 100.0 / 9},
                                     {0.002, 0.002, 0.0},
                                     {0.004, 0.005, -20.0},
                                     PlanFigure{0.036, 0.0288, 25.0},
                                     std::nullopt,
                                     std::nullopt}};
  plan.notes = {"the plan has tp 1, the run tp 2"};
  r.plan = plan;
  const std::string html = report_html(r);
  EXPECT_NE(html.find("<h2>Planned versus measured</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>+11%</td>"), std::string::npos);  // 10 GiB planned, 9 measured
  EXPECT_NE(html.find("<td>-20%</td>"), std::string::npos);  // backward 4 ms planned, 5 measured
  // The kinds a plan splits: GEMM 36 ms planned, 28.8 measured; attention not compared.
  EXPECT_NE(html.find("<td>36.00</td><td>28.80</td><td>+25%</td><td>-</td><td>-</td><td>-</td>"),
            std::string::npos);
  EXPECT_NE(html.find("the plan has tp 1, the run tp 2"), std::string::npos);
  EXPECT_NE(html.find("Root: rank(s) 3 (no trace)"), std::string::npos);
  EXPECT_NE(html.find("Traces not closed (killed or crashed): 1,3"), std::string::npos);
  EXPECT_NE(html.find("<td>2</td><td>recv</td><td>3 (no trace)</td>"), std::string::npos);
}

TEST(ReportJson, PlanFiguresCarryTheirErrorAndBytesAreIntegers) {
  RunReport r = two_stage_run();
  PlanComparison plan;
  plan.stages = {PlanStageComparison{
      0, {10.0 * (1u << 30), 9.0 * (1u << 30), 100.0 / 9}, {0.002, {}, {}}, {}, {}, {}, {}}};
  plan.step_s = {0.07, 0.056, 25.0};
  r.plan = plan;
  const auto doc = nlohmann::json::parse(report_json(r));
  const auto& stage = doc["plan"]["stages"][0];
  EXPECT_TRUE(stage["predicted_peak_memory_bytes"].is_number_unsigned());
  EXPECT_EQ(stage["predicted_peak_memory_bytes"], 10ull << 30);
  EXPECT_EQ(stage["measured_peak_memory_bytes"], 9ull << 30);
  EXPECT_NEAR(stage["peak_memory_error_percent"].get<double>(), 11.11, 0.01);
  EXPECT_TRUE(stage["measured_forward_s"].is_null());
  EXPECT_TRUE(stage["forward_error_percent"].is_null());
  EXPECT_EQ(doc["plan"]["step_error_percent"], 25.0);
}

TEST(ReportJson, CommunicatorIdsAreHexStringsThatKeepAll64Bits) {
  RunReport r = two_stage_run();
  r.layout.communicators[0].comm_id = 0x9a57c2b5e8e8511bULL;  // above 2^53: a double would round it
  r.nccl = {NcclOpReport{0x9a57c2b5e8e8511bULL, "data", "all_reduce", 2, 1, 8, 10, 0, 0, -1, 0}};
  const auto doc = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(doc["layout"]["communicators"][0]["comm_id"], "0x9a57c2b5e8e8511b");
  EXPECT_EQ(doc["nccl"][0]["comm_id"], "0x9a57c2b5e8e8511b");
  EXPECT_EQ(doc["hang"]["communicators"][0]["comm_id"], "0x000000000000002a");  // 42
}

TEST(ReportText, CommunicatorsAreCountedPerRoleAndSize) {
  RunReport r;
  r.layout.source = "inferred";
  for (int k = 0; k < 20; ++k)
    r.layout.communicators.push_back({static_cast<uint64_t>(k), "other", {0, 1}, {}});
  r.layout.communicators.push_back({99, "other", std::vector<int32_t>(16, 0), {}});
  std::ostringstream out;
  write_report_text(out, r);
  EXPECT_NE(out.str().find("other     20 communicator(s) of 2 ranks, 1 communicator(s) of 16 ranks"),
            std::string::npos)
      << out.str();
}

TEST(ReportOutputs, AnEmptyReportStillRenders) {
  const RunReport empty;
  std::ostringstream out;
  write_report_text(out, empty);
  EXPECT_NE(out.str().find("nothing stands out"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(report_json(empty)).is_object());
  EXPECT_NE(report_html(empty).find("</html>"), std::string::npos);
}

// A failed run: the failure class, where the hang's root is, a creation hang, a desync and a p2p
// size mismatch, in each output.
RunReport failed_run() {
  RunReport r = two_stage_run();
  r.failure = FailureReport{"fatal signal", 3, 2'000'000, 1, 11, "rank 3 ended by SIGSEGV in step 1"};
  r.hang.root_ranks = {3};
  r.hang.roots = {HangRoot{3, "signal", "", 11, 2'000'000, 3}};
  CommHang creation{7, "world", 0, "ncclCommInitRank", {0, 1, 2}, {3}, 900'000'000, {3}};
  creation.creation = true;
  r.hang.communicators.push_back(creation);
  r.hang.desyncs = {Desync{42, "data", 5, {1, 3}, "rank 1 all_reduce, rank 3 all_gather"}};
  r.hang.p2p_mismatches = {P2pMismatch{0, 2, "pipeline", 4}};
  r.earlier_attempts = {
      RunReport::EarlierAttempt{0, FailureReport{"exit status", 1, -1, -1, 1, "rank 1 exited"}}};
  return r;
}

TEST(ReportOutputs, AFailedRunSaysHowItFailedInEveryFormat) {
  const RunReport r = failed_run();
  const auto doc = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(doc["failure"]["kind"], "fatal signal");
  EXPECT_EQ(doc["failure"]["rank"], 3);
  EXPECT_EQ(doc["failure"]["step"], 1);
  EXPECT_EQ(doc["failure"]["code"], 11);
  EXPECT_EQ(doc["hang"]["roots"][0]["where"], "signal");
  EXPECT_EQ(doc["hang"]["roots"][0]["code"], 11);
  EXPECT_TRUE(doc["hang"]["roots"][0]["call"].is_null());
  EXPECT_EQ(doc["hang"]["roots"][0]["waiting"], 3);
  EXPECT_TRUE(doc["hang"]["communicators"][1]["creation"].get<bool>());
  EXPECT_EQ(doc["hang"]["desyncs"][0]["ranks"], nlohmann::json::array({1, 3}));
  EXPECT_EQ(doc["hang"]["p2p_size_mismatches"][0]["receiver"], 2);
  EXPECT_EQ(doc["earlier_attempts"][0]["failure"]["kind"], "exit status");
  EXPECT_TRUE(doc["earlier_attempts"][0]["failure"]["at_ns"].is_null());
  EXPECT_TRUE(nlohmann::json::parse(report_json(two_stage_run()))["failure"].is_null());

  std::ostringstream out;
  write_report_text(out, r);
  const std::string text = out.str();
  EXPECT_NE(text.find("failure (fatal signal): rank 3 ended by SIGSEGV in step 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 3: ended by signal 11 since 2.0 ms; 3 rank(s) wait on it"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ncclCommInitRank entered by 0,1,2; never entered: 3 (no"), std::string::npos) << text;
  EXPECT_NE(text.find("desync: data communicator"), std::string::npos) << text;
  EXPECT_NE(text.find("p2p size mismatch: rank 0 send #4 to rank 2 (pipeline)"), std::string::npos) << text;

  const std::string html = report_html(r);
  EXPECT_NE(html.find("<h2>Failure</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Desyncs</h2>"), std::string::npos);
  EXPECT_NE(html.find("Rank 3: signal"), std::string::npos);
}
}  // namespace
}  // namespace pipescope::report
