#include "json_reader.h"

#include <cmath>
#include <utility>

#include "pipescope/common/json_document.h"

namespace pipescope::planner::detail {
namespace {

// The offending value as the user wrote it, short enough for one line.
std::string shown(const json& value) {
  std::string text = value.dump();
  constexpr size_t kMaxChars = 40;
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

const char* range_words(Range range, bool integer) {
  switch (range) {
    case Range::kPositive: return integer ? "a positive integer" : "a positive number";
    case Range::kNonNegative: return integer ? "an integer >= 0" : "a number >= 0";
    case Range::kFraction: return "a fraction in (0, 1]";
    case Range::kOpenFraction: return "a fraction in (0, 1)";
  }
  return "a number";
}

bool in_range(double value, Range range) {
  switch (range) {
    case Range::kPositive: return value > 0;
    case Range::kNonNegative: return value >= 0;
    case Range::kFraction: return value > 0 && value <= 1;
    case Range::kOpenFraction: return value > 0 && value < 1;
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

void JsonReader::fail(const std::string& message) {
  if (failed_) return;
  failed_ = true;
  message_ = document_ + ": " + message;
}

json JsonReader::parse(std::string_view text) {
  Expected<json> root = parse_json_object(text, document_);
  if (root) return std::move(*root);
  if (!failed_) {
    failed_ = true;
    message_ = root.error().message;
  }
  return json::object();
}

void JsonReader::check_schema_version(const json& root, int supported) {
  const int64_t version = integer(root, "schema_version", "", Range::kPositive);
  if (ok() && version > supported) {
    fail("schema_version " + std::to_string(version) + " is newer than this pipescope understands (" +
         std::to_string(supported) + "); upgrade pipescope, or write the file with schema_version " +
         std::to_string(supported));
  }
}

const json* JsonReader::member(const json& parent, std::string_view key, const std::string& path) {
  if (failed_) return nullptr;
  const auto it = parent.find(key);
  if (it == parent.end()) {
    fail("field '" + field_path(path, key) + "' is missing");
    return nullptr;
  }
  return &*it;
}

bool JsonReader::expect_object(const json& node, const std::string& path) {
  if (failed_) return false;
  if (!node.is_object()) {
    fail("field '" + path + "' must be an object, got " + shown(node));
    return false;
  }
  return true;
}

const json* JsonReader::object(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return nullptr;
  if (!value->is_object()) {
    fail("field '" + field_path(path, key) + "' must be an object, got " + shown(*value));
    return nullptr;
  }
  return value;
}

const json* JsonReader::array(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return nullptr;
  if (!value->is_array() || value->empty()) {
    fail("field '" + field_path(path, key) + "' must be a non-empty array, got " + shown(*value));
    return nullptr;
  }
  return value;
}

double JsonReader::number(const json& parent, std::string_view key, const std::string& path, Range range) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return 1;
  if (!value->is_number() || !std::isfinite(value->get<double>()) || !in_range(value->get<double>(), range)) {
    fail("field '" + field_path(path, key) + "' must be " + range_words(range, false) + ", got " +
         shown(*value));
    return 1;
  }
  return value->get<double>();
}

int64_t JsonReader::integer(const json& parent, std::string_view key, const std::string& path, Range range,
                            int64_t max) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return 1;
  // 80e9 is as good as 80000000000: a float with an integral value is accepted.
  const double as_double = value->is_number() ? value->get<double>() : 0;
  const bool integral = value->is_number_integer() || (value->is_number_float() && std::isfinite(as_double) &&
                                                       std::trunc(as_double) == as_double);
  if (!integral || !in_range(as_double, range) || as_double > static_cast<double>(max)) {
    fail("field '" + field_path(path, key) + "' must be " + range_words(range, true) +
         (integral && as_double > static_cast<double>(max) ? " no larger than " + std::to_string(max) : "") +
         ", got " + shown(*value));
    return 1;
  }
  return value->is_number_float() ? static_cast<int64_t>(as_double) : value->get<int64_t>();
}

std::string JsonReader::string(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key, path);
  if (value == nullptr) return {};
  if (!value->is_string() || value->get<std::string>().empty()) {
    fail("field '" + field_path(path, key) + "' must be a non-empty string, got " + shown(*value));
    return {};
  }
  return value->get<std::string>();
}

std::optional<std::string> JsonReader::optional_string(const json& parent, std::string_view key,
                                                       const std::string& path) {
  if (failed_ || !parent.contains(key)) return std::nullopt;
  return string(parent, key, path);
}

void JsonReader::only_fields(const json& object, const std::string& path,
                             std::initializer_list<std::string_view> allowed) {
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

bool looks_like_path(std::string_view name_or_path) {
  return name_or_path.find('/') != std::string_view::npos ||
         (name_or_path.size() >= 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
}

}  // namespace pipescope::planner::detail
