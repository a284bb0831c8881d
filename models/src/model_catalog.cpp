#include "pipescope/models/model_catalog.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "bundled_model_files.h"
#include "json_fields.h"
#include "model_parsers.h"
#include "pipescope/common/data_dirs.h"
#include "pipescope/common/text_file.h"

namespace pipescope::models {
namespace {

std::string bundled_names_joined() {
  std::string names;
  for (const auto& file : detail::bundled_model_files())
    names += (names.empty() ? "" : ", ") + std::string(file.name);
  return names;
}

// A Hugging Face checkpoint is a directory named for the model holding config.json.
std::string name_from_path(const std::filesystem::path& path) {
  if (path.filename() == "config.json" && path.has_parent_path() && !path.parent_path().filename().empty()) {
    return path.parent_path().filename().string();
  }
  return path.stem().string();
}

}  // namespace

std::vector<std::string> list_bundled_models() {
  std::vector<std::string> names;
  for (const auto& file : detail::bundled_model_files()) names.emplace_back(file.name);
  return names;
}

Expected<ModelDesc> load_bundled_model(std::string_view name) {
  for (const auto& file : detail::bundled_model_files()) {
    if (file.name == name)
      return parse_model_file(file.json, file.name, "bundled model '" + std::string(name) + "'");
  }
  return Error{"unknown bundled model '" + std::string(name) + "' (bundled: " + bundled_names_joined() + ")"};
}

Expected<ModelDesc> parse_model_file(std::string_view text, std::string_view name, std::string_view origin) {
  Expected<nlohmann::json> document = parse_json_object(text, origin);
  if (!document) return document.error();
  if (document->contains("model_type") || document->contains("architectures")) {
    return detail::model_from_hf_json(*document, name, origin);
  }
  if (document->contains("schema_version")) return detail::model_from_pipescope_json(*document, origin);
  return Error{std::string(origin) +
               ": neither a Hugging Face config.json (no 'model_type') nor a pipescope model description "
               "(no 'schema_version')"};
}

Expected<ModelDesc> load_model(const std::string& name_or_path) {
  for (const auto& file : detail::bundled_model_files()) {
    if (file.name == name_or_path) return load_bundled_model(file.name);
  }
  std::filesystem::path path(name_or_path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "config.json";
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (auto installed = find_data_file("models", name_or_path)) {
      path = *installed;
    } else {
      return Error{"model '" + name_or_path + "' is neither a bundled model (" + bundled_names_joined() +
                   ") nor a readable file or checkpoint directory with a config.json"};
    }
  }
  auto text = read_text_file(path.string(), "model file");
  if (!text) return text.error();
  return parse_model_file(*text, name_from_path(path), path.string());
}

}  // namespace pipescope::models
