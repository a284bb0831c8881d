// A whole JSON input read as an object, its errors as values: the one parser behind every JSON
// document pipescope reads (model, GPU, cluster and calibration files, plans). A syntax error
// names the document and the byte; nlohmann's exceptions stop here.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"

namespace pipescope {

// `origin` starts every message, e.g. "config.json" or "GPU file 'x.json'".
Expected<nlohmann::json> parse_json_object(std::string_view text, std::string_view origin);

// A value as a message names it: "the integer 4096", "the string \"4096\"", "an array", "null".
std::string describe_json_value(const nlohmann::json& value);

}  // namespace pipescope
