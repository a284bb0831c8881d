#include "loaded_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace pipescope::inject::testing {

LoadedTrace load_trace(const std::string& path) {
  auto loaded = read_trace(path);
  if (!loaded.ok()) {
    ADD_FAILURE() << loaded.error().message;
    LoadedTrace empty;
    empty.path = path;
    return empty;
  }
  return std::move(*loaded);
}

std::string make_temp_dir(const std::string& tag) {
  std::string pattern = ::testing::TempDir() + "pipescope-" + tag + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
  return pattern;
}

}  // namespace pipescope::inject::testing
