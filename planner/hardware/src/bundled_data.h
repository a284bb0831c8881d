// The JSON files compiled into the library by cmake/embed_json.cmake, so that the planner finds its
// bundled GPUs, clusters and profiles wherever the binary runs. Internal to pipescope_hardware.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace pipescope::planner::detail {

struct EmbeddedFile {
  const char* name;  // file stem: the name users type (a100-80gb, kalos, ...)
  const char* text;
};

// Defined in the generated bundled_hardware_data.cpp; each list is sorted by name.
std::span<const EmbeddedFile> bundled_gpus();
std::span<const EmbeddedFile> bundled_clusters();
std::span<const EmbeddedFile> bundled_profiles();
std::span<const EmbeddedFile> bundled_node_defaults();

inline const EmbeddedFile* find_bundled(std::span<const EmbeddedFile> files, std::string_view name) {
  for (const auto& file : files) {
    if (name == file.name) return &file;
  }
  return nullptr;
}

inline std::string bundled_names(std::span<const EmbeddedFile> files) {
  std::string names;
  for (const auto& file : files) {
    if (!names.empty()) names += ", ";
    names += file.name;
  }
  return names;
}

}  // namespace pipescope::planner::detail
