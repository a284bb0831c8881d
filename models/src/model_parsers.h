// The two description readers on an already parsed JSON document, so that model_catalog.cpp
// parses a file once and then decides which format it holds. Internal to pipescope_models.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"
#include "pipescope/models/model_desc.h"

namespace pipescope::models::detail {

// pipescope's format (model_json.h). The result is validated.
Expected<ModelDesc> model_from_pipescope_json(const nlohmann::json& document, std::string_view origin);

// A Hugging Face config.json (hf_config.h); `name` becomes ModelDesc::name. Validated.
Expected<ModelDesc> model_from_hf_json(const nlohmann::json& document, std::string_view name,
                                       std::string_view origin);

}  // namespace pipescope::models::detail
