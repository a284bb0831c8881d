// The README opens with the command a new user runs first; it must keep working as written.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"

namespace pipescope::testing {
namespace {

// The arguments after "build/cli/pipescope" on the README's first command line.
std::vector<std::string> readme_main_command_args() {
  std::ifstream readme(std::string(PIPESCOPE_SOURCE_DIR) + "/README.md");
  std::string line;
  while (std::getline(readme, line) && line != "```sh") {
  }
  std::getline(readme, line);
  const std::string binary = "build/cli/pipescope ";
  const size_t at = line.find(binary);
  std::vector<std::string> args;
  if (at == std::string::npos) return args;
  std::istringstream words(line.substr(at + binary.size()));
  for (std::string word; words >> word;) args.push_back(word);
  return args;
}

TEST(Readme, MainCommandRunsAPlanAndShowsBothSplits) {
  const std::vector<std::string> args = readme_main_command_args();
  ASSERT_FALSE(args.empty()) << "README.md's first command no longer runs build/cli/pipescope";
  EXPECT_EQ(args.front(), "plan");
  const CommandResult r = run_pipescope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("uniform split"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("suggested split"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pipescope::testing
