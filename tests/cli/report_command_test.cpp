// `pipescope report` and `pipescope export` as users run them: outputs on a simulated run, a
// directory of PyTorch profiler traces, and every kind of bad input (one line, exit 2).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_command.h"
#include "synthetic_run.h"

namespace pipescope::testing {
namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() {
    path_ = fs::path(::testing::TempDir()) /
            ("pipescope-report-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_run(const Dir& dir, synthetic::SyntheticRunSpec spec = {}) {
  auto truth = synthetic::write_synthetic_run(spec, dir.str());
  ASSERT_TRUE(truth.ok()) << truth.error().message;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void expect_bad_input(const CommandResult& r, const std::string& part) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ReportCommand, TerminalReportPutsFindingsFirst) {
  Dir dir;
  write_run(dir);
  const CommandResult r = run_pipescope({"report", dir.str()});
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
  const CommandResult r = run_pipescope({"report", dir.str(), "--json"});
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

TEST(ReportCommand, HtmlIsOneSelfContainedFile) {
  Dir dir;
  write_run(dir);
  const std::string html = dir.file("report.html");
  const CommandResult r = run_pipescope({"report", dir.str(), "--html", html});
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

TEST(ReportCommand, ReadsPyTorchProfilerTraces) {
  Dir dir;
  for (const char* name : {"rank-0.json.gz", "rank-1.json.gz"})
    fs::copy_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/" + name, dir.file(name));
  const CommandResult r = run_pipescope({"report", dir.str(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source_format"], "kineto");
  EXPECT_EQ(doc["run_id"], "kineto:nccl:128");
  ASSERT_EQ(doc["ranks"].size(), 2u);
  EXPECT_EQ(doc["missing_ranks"].size(), 126u);
  EXPECT_EQ(doc["steps"]["source"], "nvtx");  // ProfilerStep#551, #552
  EXPECT_EQ(doc["steps"]["count"], 2);
  EXPECT_TRUE(doc["ranks"][0]["gpu"]["captured"].get<bool>());
  EXPECT_FALSE(fs::exists(dir.file("kineto-0.pst")));  // the user's directory is left alone
}

TEST(ReportCommand, BadInputIsOneLineAndExit2) {
  Dir empty;
  expect_bad_input(run_pipescope({"report", empty.str()}), "no *.pst traces");

  Dir foreign;
  write_run(foreign);
  std::ofstream(foreign.file("notes.pst")) << "these are not trace bytes, just a text file named .pst\n";
  expect_bad_input(run_pipescope({"report", foreign.str()}), "notes.pst is not a readable pipescope trace");

  Dir mixed;
  synthetic::SyntheticRunSpec a;
  a.tp = 1;
  a.pp = 2;
  a.dp = 1;
  a.run_id = "job-a";
  write_run(mixed, a);
  Dir other;
  synthetic::SyntheticRunSpec b = a;
  b.run_id = "job-b";
  write_run(other, b);
  for (const auto& entry : fs::directory_iterator(other.str()))
    fs::copy_file(entry.path(), mixed.file("b-" + entry.path().filename().string()));
  const CommandResult both = run_pipescope({"report", mixed.str()});
  expect_bad_input(both, "--run");
  EXPECT_NE(both.err.find("job-a"), std::string::npos);
  EXPECT_NE(both.err.find("job-b"), std::string::npos);
  const CommandResult picked = run_pipescope({"report", mixed.str(), "--run", "job-b", "--json"});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(nlohmann::json::parse(picked.out)["run_id"], "job-b");
  expect_bad_input(run_pipescope({"report", mixed.str(), "--run", "job-c"}), "job-c");

  Dir twice;
  write_run(twice, a);
  for (const auto& entry : fs::directory_iterator(twice.str()))
    if (entry.path().filename().string().starts_with("rank-0."))
      fs::copy_file(entry.path(), twice.file("copy-of-rank-0.pst"));
  expect_bad_input(run_pipescope({"report", twice.str()}), "rank 0 has two traces");

  Dir plan;
  write_run(plan, a);
  std::ofstream(plan.file("plan.json")) << "{\"not\": \"a plan\"}";
  expect_bad_input(run_pipescope({"report", plan.str(), "--plan", plan.file("plan.json")}), "plan.json");
}

TEST(ReportCommand, TruncatedTraceIsUsedAsFarAsItGoes) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.kernels_per_microbatch = 64;  // several chunks per trace
  write_run(dir, spec);
  std::string victim;
  for (const auto& entry : fs::directory_iterator(dir.str()))
    if (entry.path().filename().string().starts_with("rank-3.")) victim = entry.path().string();
  fs::resize_file(victim, fs::file_size(victim) / 2);
  const CommandResult r = run_pipescope({"report", dir.str(), "--json"});
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

TEST(ExportCommand, PerfettoJsonWithFlowsAndAWindow) {
  Dir dir;
  write_run(dir);
  const std::string out = dir.file("trace.json");
  const CommandResult r =
      run_pipescope({"export", dir.str(), "--format", "perfetto", "-o", out, "--ranks", "0-3,8"});
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
  const CommandResult all = run_pipescope({"export", dir.str(), "--format", "perfetto", "-o", out});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  sends.clear();
  recvs.clear();
  double last_ts = 0;
  const auto whole = nlohmann::json::parse(slurp(out));
  for (const auto& e : whole["traceEvents"]) {
    if (e["ph"] == "s") sends.insert(e["id"].get<uint64_t>());
    if (e["ph"] == "f") recvs.insert(e["id"].get<uint64_t>());
    if (e["ph"] == "X") last_ts = std::max(last_ts, e["ts"].get<double>());
  }
  EXPECT_FALSE(sends.empty());
  EXPECT_EQ(sends, recvs);
  const CommandResult window =
      run_pipescope({"export", dir.str(), "--format", "perfetto", "-o", out, "--window", "0.05:0.06"});
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
  ASSERT_EQ(run_pipescope({"export", dir.str(), "--format", "sqlite", "-o", out}).exit_code, 0);
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
  EXPECT_EQ(scalar("SELECT value FROM meta WHERE key = 'schema_version'"), 1);
  EXPECT_GT(scalar("SELECT COUNT(*) FROM strings s JOIN kernel k ON s.rank = k.rank AND s.id = k.name_id"),
            0);
  sqlite3_close(db);
  // Replacing an earlier export is fine; a file that is not one is refused.
  EXPECT_EQ(run_pipescope({"export", dir.str(), "--format", "sqlite", "-o", out}).exit_code, 0);
  std::ofstream(dir.file("precious.db")) << "user data";
  expect_bad_input(run_pipescope({"export", dir.str(), "--format", "sqlite", "-o", dir.file("precious.db")}),
                   "not a pipescope export");
  EXPECT_EQ(slurp(dir.file("precious.db")), "user data");
}

TEST(ReportCommand, NvtxOverridesNameTheRangesTheDefaultsMiss) {
  Dir dir;
  synthetic::SyntheticRunSpec spec;
  spec.step_range = "iter_boundary";
  spec.forward_range = "fprop";
  spec.backward_range = "bprop";
  write_run(dir, spec);
  const CommandResult plain = run_pipescope({"report", dir.str(), "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["steps"]["source"], "collectives");
  const CommandResult r = run_pipescope({"report", dir.str(), "--json", "--nvtx-step", "^iter_boundary$",
                                         "--nvtx-forward", "^fprop$", "--nvtx-backward", "^bprop$"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["steps"]["source"], "nvtx");
  EXPECT_EQ(doc["steps"]["count"], 3);
  EXPECT_EQ(doc["stages"][0]["source"], "nvtx");
  EXPECT_EQ(doc["stages"][0]["forward_mean_ns"], 2'000'000);
}

}  // namespace
}  // namespace pipescope::testing
