// The whole of a file as text: the one reader of every input file the planner, the calibration
// and the command line take whole (models, clusters, profiles, benchmark results, plans).
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "pipescope/common/expected.h"

namespace pipescope {

// "cannot read <what> '<path>': <the system's reason>" when it cannot.
inline Expected<std::string> read_text_file(const std::string& path, std::string_view what) {
  const auto failure = [&] {
    return Error{"cannot read " + std::string(what) + " '" + path + "': " + std::strerror(errno)};
  };
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return failure();
  std::ostringstream text;
  errno = 0;
  text << in.rdbuf();
  // Nothing copied: an empty file (errno untouched), or a read that failed (a directory, an I/O
  // error), which sets errno.
  if (text.fail() && errno != 0) return failure();
  return text.str();
}

}  // namespace pipescope
