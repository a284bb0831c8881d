// Where model descriptions come from: the bundled ones by name (compiled into the library from
// models/bundled/*.json, so the binary works anywhere), or a file: pipescope's own format
// (model_json.h) or a Hugging Face config.json (hf_config.h), told apart by their fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models {

// Names of the bundled descriptions, sorted: "gpt3-175b", ..., "mixtral-8x7b".
std::vector<std::string> list_bundled_models();

// A bundled description by its exact name.
Expected<ModelDesc> load_bundled_model(std::string_view name);

// A bundled name first; otherwise a path to a JSON file, or to a directory holding a
// config.json (a Hugging Face checkpoint). A file with `model_type` is read as a Hugging Face
// config, one with `schema_version` as pipescope's format. The error names what was tried.
Expected<ModelDesc> load_model(const std::string& name_or_path);

// Either format from text; `name` is used for a Hugging Face config (which holds no name).
Expected<ModelDesc> parse_model_file(std::string_view text, std::string_view name, std::string_view origin);

}  // namespace pipescope::models
