// What the tests of `pipescope report` and `pipescope export` share: a simulated run written as
// real traces, whole-file reads, and the CLI contract's check for bad input.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "run_command.h"
#include "synthetic_run.h"
#include "trace_test_support.h"

namespace pipescope::testing {

using trace::test::ScratchDir;

inline void write_run(const ScratchDir& dir, const synthetic::SyntheticRunSpec& spec = {}) {
  auto truth = synthetic::write_synthetic_run(spec, dir.path());
  ASSERT_TRUE(truth.ok()) << truth.error().message;
}

inline std::string slurp(const std::string& path) { return trace::test::read_text(path); }

// The trace of `rank` in a directory the synthetic run wrote (rank-<rank>.<pid>.pst).
inline std::string trace_of_rank(const ScratchDir& dir, int rank) {
  const std::string prefix = "rank-" + std::to_string(rank) + ".";
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().filename().string().starts_with(prefix)) return entry.path().string();
  return {};
}

// Files a write left behind beside its output (its temporary file, when it failed).
inline int partial_files(const ScratchDir& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    n += entry.path().filename().string().find(".partial-") != std::string::npos ? 1 : 0;
  return n;
}

// docs/design.md's contract for bad input: exit 2, one line on stderr naming the problem, no output.
inline void expect_bad_input(const CommandResult& r, const std::string& part) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace pipescope::testing
