#include "hardware_test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace pipescope::planner::testing {

std::string write_temp_file(const std::string& file_name, const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pipescope-hardware" /
                                    (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / file_name;
  std::ofstream(path) << text;
  return path.string();
}

std::string read_source_file(const std::string& relative_path) {
  std::ifstream in(source_dir() / relative_path);
  EXPECT_TRUE(in.good()) << relative_path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace pipescope::planner::testing
