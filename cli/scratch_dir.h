// A private directory of the command's own (Kineto traces converted for `report` and `export`,
// a link to a trace named by itself), gone when the command ends: when the last copy of its
// `cleanup` goes, and also when SIGINT, SIGTERM, SIGHUP or SIGPIPE ends the command first (a
// Ctrl-C during a long conversion, `report | head` closing the pipe: interrupted_cleanup.h).
#pragma once

#include <memory>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::cli {

// Under $TMPDIR (else /tmp), named pipescope-<tag>-XXXXXX. The directory is flat: what is put in
// it are files and links, no subdirectories.
Expected<std::string> make_scratch_dir(const std::string& tag, std::shared_ptr<void>& cleanup);

}  // namespace pipescope::cli
