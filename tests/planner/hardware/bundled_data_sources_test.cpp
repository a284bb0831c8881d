// "Numbers the planner uses come from calibration profiles with a stated source" (docs/design.md).
// This walks every shipped JSON file generically: any number must sit in an object that also has
// a non-empty "source", so a number added without one fails here whatever field it is in.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware_test_support.h"

namespace pipescope::planner {
namespace {

using nlohmann::json;

// Appends to `unsourced` the path of every number without a source next to it.
void find_unsourced_numbers(const json& node, const std::string& path, std::vector<std::string>& unsourced) {
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string here = path + "[" + std::to_string(i) + "]";
      if (node[i].is_number()) unsourced.push_back(here + " (a bare number has no room for a source)");
      find_unsourced_numbers(node[i], here, unsourced);
    }
    return;
  }
  if (!node.is_object()) return;
  const bool sourced =
      node.contains("source") && node["source"].is_string() && !node["source"].get<std::string>().empty();
  for (const auto& [key, value] : node.items()) {
    std::string here = path;
    if (!here.empty()) here += ".";
    here += key;
    // schema_version says how to read the file; it is not a measurement.
    if (value.is_number() && !sourced && !(path.empty() && key == "schema_version"))
      unsourced.push_back(here);
    find_unsourced_numbers(value, here, unsourced);
  }
}

std::vector<std::filesystem::path> json_files_under(const std::string& relative_dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(testing::source_dir() / relative_dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  return files;
}

TEST(SourceWalk, FlagsANumberWithoutASource) {
  std::vector<std::string> unsourced;
  find_unsourced_numbers(json::parse(R"({"schema_version": 1, "a": {"value": 1, "source": "x"},
                                         "b": {"value": 2, "source": ""}, "c": [3], "d": {"e": [{"f": 4}]}})"),
                         "", unsourced);
  EXPECT_EQ(unsourced, (std::vector<std::string>{"b.value", "c[0] (a bare number has no room for a source)",
                                                 "d.e[0].f"}));
}

TEST(ShippedProfiles, EveryNumberHasASource) {
  const auto files = json_files_under("calibrate/profiles");
  ASSERT_GE(files.size(), 2u);
  for (const auto& file : files) {
    std::vector<std::string> unsourced;
    find_unsourced_numbers(json::parse(testing::read_source_file(
                               std::filesystem::relative(file, testing::source_dir()).string())),
                           "", unsourced);
    EXPECT_TRUE(unsourced.empty()) << file << ": " << ::testing::PrintToString(unsourced);
  }
}

TEST(BundledHardware, EveryNumberHasASource) {
  const auto files = json_files_under("planner/hardware/data");
  ASSERT_GE(files.size(), 8u);  // 3 GPUs, 4 clusters, the --gpu node
  for (const auto& file : files) {
    std::vector<std::string> unsourced;
    find_unsourced_numbers(json::parse(testing::read_source_file(
                               std::filesystem::relative(file, testing::source_dir()).string())),
                           "", unsourced);
    EXPECT_TRUE(unsourced.empty()) << file << ": " << ::testing::PrintToString(unsourced);
  }
}

}  // namespace
}  // namespace pipescope::planner
