// The bundled model descriptions, compiled into the library by a build step
// (models/cmake/embed_bundled_models.cmake). Internal to pipescope_models.
#pragma once

#include <span>
#include <string_view>

namespace pipescope::models::detail {

struct BundledModelFile {
  std::string_view name;  // the file's stem: the name users pass to --model
  std::string_view json;  // the file's bytes
};

// Sorted by name.
std::span<const BundledModelFile> bundled_model_files();

}  // namespace pipescope::models::detail
