// What the hardware parsers share besides the field reader (common/json_fields.h): whether a
// command-line value names a file or a bundled entry, and reading that file.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "pipescope/common/json_fields.h"
#include "pipescope/common/text_file.h"

namespace pipescope::planner::detail {

using nlohmann::json;
using pipescope::read_text_file;  // common/text_file.h

// A command-line value names a bundled entry unless it looks like a file.
inline bool looks_like_path(std::string_view name_or_path) {
  return name_or_path.find('/') != std::string_view::npos ||
         (name_or_path.size() >= 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
}

}  // namespace pipescope::planner::detail
