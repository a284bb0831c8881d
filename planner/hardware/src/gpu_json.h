// Reading a GPU object, shared by GPU files and the inline "gpu" of a cluster file.
#pragma once

#include <string>

#include "named_input.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::planner::detail {

// `top_level`: a GPU file, which carries schema_version; an inline GPU does not.
Gpu read_gpu(JsonFieldReader& reader, const json& object, const std::string& path, bool top_level);

}  // namespace pipescope::planner::detail
