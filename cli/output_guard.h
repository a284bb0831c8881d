// The outputs of `report --html FILE` and `export -o FILE`, checked before any analysis so that a
// mistake costs nothing and destroys nothing: an output may not be one of the command's inputs,
// a pipescope trace (*.pst) or a PyTorch profiler trace, and its directory must take a new file.
#pragma once

#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::cli {

// `inputs`: every file the command reads (the traces, the plan). `what` names the option in
// the message ("--html", "-o").
Status check_output(const std::string& path, const std::vector<std::string>& inputs, const std::string& what);

}  // namespace pipescope::cli
