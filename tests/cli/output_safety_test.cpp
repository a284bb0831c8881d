// Nothing the user gave is lost: `report --html` and `export -o` refuse to write over a trace,
// a PyTorch profiler trace or another input, check their output before any analysis, and
// replace an output only once it is complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "report_test_support.h"

namespace pipescope::testing {
namespace {

namespace fs = std::filesystem;

synthetic::SyntheticRunSpec small_run() { return synthetic::with_layout(1, 2, 1); }

TEST(OutputSafety, ExportRefusesToWriteOverATrace) {
  ScratchDir dir;
  write_run(dir, small_run());
  const std::string trace = trace_of_rank(dir, 0);
  const std::string before = slurp(trace);
  for (const char* format : {"perfetto", "sqlite"}) {
    expect_bad_input(run_pipescope({"export", dir.path(), "--format", format, "-o", trace}),
                     "one of this command's inputs");
    EXPECT_EQ(slurp(trace), before) << format;
  }
  EXPECT_EQ(partial_files(dir), 0);
}

TEST(OutputSafety, ReportRefusesToWriteHtmlOverATraceOrThePlan) {
  ScratchDir dir;
  write_run(dir, small_run());
  const std::string trace = trace_of_rank(dir, 1);
  const std::string before = slurp(trace);
  expect_bad_input(run_pipescope({"report", dir.path(), "--html", trace}), "one of this command's inputs");
  EXPECT_EQ(slurp(trace), before);

  ScratchDir other;
  const std::string plan = other.file("plan.json");
  std::ofstream(plan) << "{\"schema_version\": 1}";
  expect_bad_input(run_pipescope({"report", dir.path(), "--plan", plan, "--html", plan}), "plan.json");
  EXPECT_EQ(slurp(plan), "{\"schema_version\": 1}");
}

TEST(OutputSafety, NoOutputIsNamedLikeATrace) {
  // A new *.pst would be read as a trace by the next report of that directory.
  ScratchDir dir, out;
  write_run(dir, small_run());
  expect_bad_input(run_pipescope({"report", dir.path(), "--html", out.file("report.pst")}), "*.pst");
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", out.file("trace.pst")}),
                   "*.pst");
  EXPECT_FALSE(fs::exists(out.file("report.pst")));
  EXPECT_FALSE(fs::exists(out.file("trace.pst")));
}

TEST(OutputSafety, NoOutputReplacesAPyTorchProfilerTrace) {
  ScratchDir kineto, elsewhere;
  const std::string source = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-0.json.gz";
  fs::copy_file(source, kineto.file("rank-0.json.gz"));
  fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/rank-1.json.gz",
                kineto.file("rank-1.json.gz"));
  fs::copy_file(source, elsewhere.file("saved.json.gz"));
  const std::string before = slurp(source);
  // An input of this very command, and a Kineto trace that is not one.
  expect_bad_input(
      run_pipescope({"export", kineto.path(), "--format", "perfetto", "-o", kineto.file("rank-0.json.gz")}),
      "one of this command's inputs");
  expect_bad_input(run_pipescope({"report", kineto.path(), "--html", elsewhere.file("saved.json.gz")}),
                   "PyTorch profiler trace");
  EXPECT_EQ(slurp(kineto.file("rank-0.json.gz")), before);
  EXPECT_EQ(slurp(elsewhere.file("saved.json.gz")), before);
}

TEST(OutputSafety, AnOutputThatCannotBeWrittenFailsBeforeTheAnalysis) {
  // The directory also holds a file that would make the analysis refuse the run: the output's
  // message comes first, so the output was checked before any trace was read.
  ScratchDir dir;
  write_run(dir, small_run());
  std::ofstream(dir.file("notes.pst")) << "not a trace";
  const std::string missing = dir.file("no-such-dir/report.html");
  expect_bad_input(run_pipescope({"report", dir.path(), "--html", missing}), "--html " + missing);
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", missing}),
                   "-o " + missing);
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", dir.path()}),
                   "is a directory");
  std::ofstream(dir.file("precious.db")) << "user data";
  expect_bad_input(run_pipescope({"export", dir.path(), "--format", "sqlite", "-o", dir.file("precious.db")}),
                   "not a pipescope export");
  EXPECT_EQ(slurp(dir.file("precious.db")), "user data");
}

TEST(OutputSafety, OutputsAreReplacedWholeAndLeaveNothingBehind) {
  ScratchDir dir, out;
  write_run(dir, small_run());
  const std::string html = out.file("report.html"), perfetto = out.file("trace.json");
  std::ofstream(html) << "an earlier report";
  std::ofstream(perfetto) << "an earlier export";
  ASSERT_EQ(run_pipescope({"report", dir.path(), "--html", html}).exit_code, 0);
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", perfetto}).exit_code, 0);
  EXPECT_EQ(slurp(html).rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(slurp(perfetto).rfind("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"pipescope\"}", 0),
            0u);
  EXPECT_EQ(partial_files(out), 0);
  // A Perfetto export written into the traces' directory is not taken for a Kineto trace.
  ASSERT_EQ(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", dir.file("t.json")}).exit_code,
            0);
  const CommandResult again = run_pipescope({"report", dir.path()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(run_pipescope({"export", dir.path(), "--format", "perfetto", "-o", dir.file("t.json")}).exit_code,
            0);
}

}  // namespace
}  // namespace pipescope::testing
