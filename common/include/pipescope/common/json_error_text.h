// The words of a JSON parser's exception without its "[json.exception.parse_error.101] " tag, for
// one-line messages a user reads. Takes std::exception so that this header depends on nothing.
#pragma once

#include <exception>
#include <string>

namespace pipescope {

inline std::string json_error_text(const std::exception& e) {
  const std::string what = e.what();
  const size_t tag_end = what.rfind("] ", what.find(' '));
  return what.starts_with("[json.exception.") && tag_end != std::string::npos ? what.substr(tag_end + 2)
                                                                              : what;
}

}  // namespace pipescope
