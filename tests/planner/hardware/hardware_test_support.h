// Helpers shared by the hardware tests: temporary JSON files and bundled files read from disk.
#pragma once

#include <filesystem>
#include <string>

namespace pipescope::planner::testing {

// Writes `text` to a fresh file under the test's temporary directory and returns its path.
std::string write_temp_file(const std::string& file_name, const std::string& text);

// The text of a file in the source tree, e.g. "planner/hardware/data/clusters/kalos.json".
std::string read_source_file(const std::string& relative_path);

inline std::filesystem::path source_dir() { return PIPESCOPE_SOURCE_DIR; }

}  // namespace pipescope::planner::testing
