// Where installed data lives beside the copies compiled into pipescope: the models, clusters and
// calibration profiles of an install (`cmake --install`, a release package) under
// <prefix>/share/pipescope/<kind>/NAME.json, found relative to the running binary at
// <prefix>/bin, so that a moved prefix still works; $PIPESCOPE_DATA_DIR first when set. A file
// there named NAME.json is known by NAME, after the bundled names.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pipescope {

// The data folders, most specific first: $PIPESCOPE_DATA_DIR, then <binary>/../share/pipescope.
inline std::vector<std::filesystem::path> data_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* given = std::getenv("PIPESCOPE_DATA_DIR"); given != nullptr && given[0] != '\0')
    dirs.emplace_back(given);
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path() / "share" / "pipescope");
  return dirs;
}

// <dir>/<kind>/<name>.json in the first data folder that has it; `name` must be a plain name.
inline std::optional<std::filesystem::path> find_data_file(std::string_view kind, std::string_view name) {
  if (name.empty() || name.find('/') != std::string_view::npos || name.front() == '.') return std::nullopt;
  std::error_code ec;
  for (const std::filesystem::path& dir : data_dirs()) {
    const std::filesystem::path file = dir / std::string(kind) / (std::string(name) + ".json");
    if (std::filesystem::is_regular_file(file, ec)) return file;
  }
  return std::nullopt;
}

}  // namespace pipescope
