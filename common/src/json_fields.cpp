#include "pipescope/common/json_fields.h"

#include <cmath>
#include <utility>

#include "pipescope/common/json_document.h"

namespace pipescope {
namespace {

using json = nlohmann::json;

// The offending value as the user wrote it, short enough for one line.
std::string shown(const json& value) {
  std::string text = value.dump();
  constexpr size_t kMaxChars = 40;
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

const char* range_words(JsonRange range, bool integer) {
  switch (range) {
    case JsonRange::kAny: return integer ? "an integer" : "a number";
    case JsonRange::kPositive: return integer ? "a positive integer" : "a positive number";
    case JsonRange::kNonNegative: return integer ? "an integer >= 0" : "a number >= 0";
    case JsonRange::kFraction: return "a fraction in (0, 1]";
    case JsonRange::kOpenFraction: return "a fraction in (0, 1)";
  }
  return "a number";
}

bool in_range(double value, JsonRange range) {
  switch (range) {
    case JsonRange::kAny: return true;
    case JsonRange::kPositive: return value > 0;
    case JsonRange::kNonNegative: return value >= 0;
    case JsonRange::kFraction: return value > 0 && value <= 1;
    case JsonRange::kOpenFraction: return value > 0 && value < 1;
  }
  return false;
}

}  // namespace

std::string field_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

void JsonFieldReader::fail(const std::string& message) {
  if (failed_) return;
  failed_ = true;
  message_ = document_ + ": " + message;
}

void JsonFieldReader::fail_field(const std::string& path, std::string_view problem) {
  fail("field '" + path + "' " + std::string(problem));
}

void JsonFieldReader::take_error(const Status& nested) {
  if (failed_ || nested.ok()) return;
  failed_ = true;
  message_ = nested.error().message;
}

Status JsonFieldReader::status() const {
  if (failed_) return Error{message_};
  return Status::Ok();
}

json JsonFieldReader::parse(std::string_view text) {
  Expected<json> root = parse_json_object(text, document_);
  if (root) return std::move(*root);
  if (!failed_) {
    failed_ = true;
    message_ = root.error().message;
  }
  return json::object();
}

void JsonFieldReader::check_schema_version(const json& root, int supported) {
  const int64_t version = integer(root, "schema_version", "", JsonRange::kPositive);
  if (ok() && version > supported) {
    fail("schema_version " + std::to_string(version) + " is newer than this pipescope understands (" +
         std::to_string(supported) + "); upgrade pipescope, or write the file with schema_version " +
         std::to_string(supported));
  }
}

const json* JsonFieldReader::present(const json& parent, std::string_view key) const {
  if (failed_ || !parent.is_object()) return nullptr;
  const auto it = parent.find(key);
  return it == parent.end() || it->is_null() ? nullptr : &*it;
}

const json* JsonFieldReader::member(const json& parent, std::string_view key, const std::string& path) {
  const json* value = present(parent, key);
  if (value == nullptr) fail_field(field_path(path, key), "is missing");
  return value;
}

bool JsonFieldReader::expect_object(const json& node, const std::string& path) {
  if (failed_) return false;
  if (!node.is_object()) {
    fail_field(path, "must be an object, got " + shown(node));
    return false;
  }
  return true;
}

const json* JsonFieldReader::object(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return nullptr;
  if (!value->is_object()) {
    fail_field(field_path(path, key), "must be an object, got " + shown(*value));
    return nullptr;
  }
  return value;
}

const json* JsonFieldReader::array(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return nullptr;
  if (!value->is_array() || value->empty()) {
    fail_field(field_path(path, key), "must be a non-empty array, got " + shown(*value));
    return nullptr;
  }
  return value;
}

double JsonFieldReader::number(const json& parent, std::string_view key, const std::string& path,
                               JsonRange range) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return 1;
  if (!value->is_number() || !std::isfinite(value->get<double>()) || !in_range(value->get<double>(), range)) {
    fail_field(field_path(path, key),
               "must be " + std::string(range_words(range, false)) + ", got " + shown(*value));
    return 1;
  }
  return value->get<double>();
}

int64_t JsonFieldReader::integer(const json& parent, std::string_view key, const std::string& path,
                                 JsonRange range, int64_t max) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return 1;
  return integer_value(*value, field_path(path, key), range, max);
}

int64_t JsonFieldReader::integer_value(const json& value, const std::string& path, JsonRange range,
                                       int64_t max) {
  if (failed_) return 1;
  // 80e9 is as good as 80000000000: a number with an integral value is accepted.
  const double as_double = value.is_number() ? value.get<double>() : 0;
  const bool integral = value.is_number_integer() || (value.is_number_float() && std::isfinite(as_double) &&
                                                      std::trunc(as_double) == as_double);
  const bool too_large =
      integral && (as_double > static_cast<double>(max) ||
                   (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}));
  if (!integral || !in_range(as_double, range) || too_large) {
    fail_field(path, "must be " + std::string(range_words(range, true)) +
                         (too_large ? " no larger than " + std::to_string(max) : "") + ", got " +
                         shown(value));
    return 1;
  }
  return value.is_number_float() ? static_cast<int64_t>(as_double) : value.get<int64_t>();
}

bool JsonFieldReader::boolean(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return false;
  if (!value->is_boolean()) {
    fail_field(field_path(path, key), "must be true or false, got " + shown(*value));
    return false;
  }
  return value->get<bool>();
}

std::string JsonFieldReader::string(const json& parent, std::string_view key, const std::string& path,
                                    bool allow_empty) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return {};
  if (!value->is_string() || (!allow_empty && value->get<std::string>().empty())) {
    fail_field(field_path(path, key),
               std::string(allow_empty ? "must be a string" : "must be a non-empty string") + ", got " +
                   shown(*value));
    return {};
  }
  return value->get<std::string>();
}

std::optional<double> JsonFieldReader::optional_number(const json& parent, std::string_view key,
                                                       const std::string& path, JsonRange range) {
  if (present(parent, key) == nullptr) return std::nullopt;
  const double value = number(parent, key, path, range);
  return ok() ? std::optional<double>(value) : std::nullopt;
}

std::optional<int64_t> JsonFieldReader::optional_integer(const json& parent, std::string_view key,
                                                         const std::string& path, JsonRange range,
                                                         int64_t max) {
  if (present(parent, key) == nullptr) return std::nullopt;
  const int64_t value = integer(parent, key, path, range, max);
  return ok() ? std::optional<int64_t>(value) : std::nullopt;
}

std::optional<bool> JsonFieldReader::optional_boolean(const json& parent, std::string_view key,
                                                      const std::string& path) {
  if (present(parent, key) == nullptr) return std::nullopt;
  const bool value = boolean(parent, key, path);
  return ok() ? std::optional<bool>(value) : std::nullopt;
}

std::optional<std::string> JsonFieldReader::optional_string(const json& parent, std::string_view key,
                                                            const std::string& path) {
  const json* value = present(parent, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    fail_field(field_path(path, key), "must be a string, got " + shown(*value));
    return std::nullopt;
  }
  return value->get<std::string>();
}

const json* JsonFieldReader::optional_object(const json& parent, std::string_view key,
                                             const std::string& path) {
  if (present(parent, key) == nullptr) return nullptr;
  return object(parent, key, path);
}

const json* JsonFieldReader::optional_array(const json& parent, std::string_view key,
                                            const std::string& path) {
  const json* value = present(parent, key);
  if (value == nullptr) return nullptr;
  if (!value->is_array()) {
    fail_field(field_path(path, key), "must be an array, got " + shown(*value));
    return nullptr;
  }
  return value;
}

void JsonFieldReader::only_fields(const json& object, const std::string& path,
                                  std::initializer_list<std::string_view> allowed) {
  only_fields(object, path, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void JsonFieldReader::only_fields(const json& object, const std::string& path,
                                  std::span<const std::string_view> allowed) {
  if (failed_) return;
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (known) continue;
    std::string names;
    for (std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
    fail("unknown field '" + field_path(path, key) + "' (known here: " + names + ")");
    return;
  }
}

}  // namespace pipescope
