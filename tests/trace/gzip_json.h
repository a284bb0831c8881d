// A gzip'ed (or plain) JSON file read whole, for tests that count what a PyTorch profiler trace
// holds on their own. Users link ZLIB::ZLIB and nlohmann_json.
#pragma once

#include <zlib.h>

#include <nlohmann/json.hpp>
#include <string>

namespace pipescope::trace::test {

inline nlohmann::json read_gz_json(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  std::string text;
  char buffer[1 << 16];
  for (int n; file != nullptr && (n = gzread(file, buffer, sizeof(buffer))) > 0;)
    text.append(buffer, static_cast<size_t>(n));
  if (file != nullptr) gzclose(file);
  return nlohmann::json::parse(text);
}

}  // namespace pipescope::trace::test
