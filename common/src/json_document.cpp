#include "pipescope/common/json_document.h"

#include "pipescope/common/json_error_text.h"

namespace pipescope {

Expected<nlohmann::json> parse_json_object(std::string_view text, std::string_view origin) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Error{std::string(origin) + ": not valid JSON (syntax error at byte " + std::to_string(e.byte) +
                 ")"};
  } catch (const nlohmann::json::exception& e) {
    // Valid syntax the parser still cannot hold, such as 1e400 (out_of_range.406).
    return Error{std::string(origin) + ": holds a number out of range (" + json_error_text(e) + ")"};
  }
  if (!document.is_object()) {
    return Error{std::string(origin) + ": the top level must be a JSON object, got " +
                 describe_json_value(document)};
  }
  return document;
}

std::string describe_json_value(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: return "the string " + value.dump();
    case nlohmann::json::value_t::number_float: return "the number " + value.dump();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "the integer " + value.dump();
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "a value of another type";
  }
}

}  // namespace pipescope
