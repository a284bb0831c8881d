// docs/design.md's command-line contract: --help and --version exit 0; bad usage exits 2 with one
// line on stderr naming what is wrong; nothing on stdout in that case.
#include <gtest/gtest.h>

#include "run_command.h"

namespace pipescope::testing {
namespace {

void expect_usage_error(const std::vector<std::string>& args, const std::string& mentions) {
  const CommandResult r = run_pipescope(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
}

TEST(CliContract, HelpListsEverySubcommandAndExitsZero) {
  const CommandResult r = run_pipescope({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"record", "report", "export", "plan", "search", "calibrate", "inspect"}) {
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  }
}

TEST(CliContract, EverySubcommandHasHelp) {
  for (const char* sub : {"record", "report", "export", "plan", "search", "calibrate", "inspect"}) {
    const CommandResult r = run_pipescope({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
  for (const char* sub : {"run", "fit", "show"}) {
    EXPECT_EQ(run_pipescope({"calibrate", sub, "--help"}).exit_code, 0) << sub;
  }
}

TEST(CliContract, VersionNamesTheTraceFormat) {
  const CommandResult r = run_pipescope({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("pipescope "), std::string::npos);
  EXPECT_NE(r.out.find("trace format 1."), std::string::npos);
}

TEST(CliContract, NoCommandIsBadUsage) { expect_usage_error({}, "command is required"); }

TEST(CliContract, UnknownCommandIsNamed) { expect_usage_error({"profile"}, "unknown command 'profile'"); }

TEST(CliContract, UnknownFlagIsBadUsage) {
  expect_usage_error({"--frobnicate"}, "frobnicate");
  expect_usage_error({"plan", "--model", "llama2-7b", "--gpu", "h100-80gb", "--gpus", "8", "--tp", "1",
                      "--pp", "1", "--bogus"},
                     "bogus");
}

TEST(CliContract, BadValuesNameTheFlag) {
  expect_usage_error(
      {"plan", "--model", "m", "--gpu", "h100-80gb", "--gpus", "8", "--tp", "two", "--pp", "1"}, "--tp");
  expect_usage_error({"plan", "--model", "m", "--gpu", "h100-80gb", "--gpus", "0", "--tp", "1", "--pp", "1"},
                     "--gpus");
  expect_usage_error(
      {"plan", "--model", "m", "--gpu", "x", "--gpus", "8", "--tp", "1", "--pp", "1", "--zero", "5"},
      "--zero");
  expect_usage_error(
      {"plan", "--model", "m", "--gpu", "x", "--gpus", "8", "--tp", "1", "--pp", "1", "--schedule", "zb"},
      "--schedule");
  expect_usage_error({"export", ".", "--format", "csv"}, "--format");
  expect_usage_error({"export", ".", "--format", "perfetto", "--ranks", "7-0"}, "--ranks");
  expect_usage_error({"export", ".", "--format", "perfetto", "--window", "9:3"}, "--window");
  expect_usage_error({"report", ".", "--layout", "tp=0"}, "--layout");
  expect_usage_error({"record", "--kinds", "kernel,cpu", "--", "true"}, "--kinds");
  expect_usage_error({"record", "--steps", "10:5", "--", "true"}, "--steps");
}

TEST(CliContract, MissingRequiredPiecesAreBadUsage) {
  expect_usage_error({"plan", "--model", "m", "--gpus", "8", "--tp", "1", "--pp", "1"}, "--cluster");
  expect_usage_error({"plan", "--model", "m", "--cluster", "seren", "--gpu", "a100-80gb", "--gpus", "8",
                      "--tp", "1", "--pp", "1"},
                     "excludes");
  expect_usage_error({"export", "."}, "--format");
  expect_usage_error({"report", "/nonexistent/traces"}, "dir");
  expect_usage_error({"record"}, "command");
  expect_usage_error({"calibrate"}, "subcommand");
}

}  // namespace
}  // namespace pipescope::testing
