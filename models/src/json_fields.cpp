#include "json_fields.h"

#include <utility>

namespace pipescope::models::detail {

JsonFields::JsonFields(const nlohmann::json& object, std::string where, std::string key_prefix)
    : object_(object), where_(std::move(where)), key_prefix_(std::move(key_prefix)) {}

const nlohmann::json* JsonFields::find(std::string_view key) {
  known_.emplace(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonFields::fail(std::string_view key, std::string_view problem) {
  if (!error_) error_ = where_ + ": field '" + key_prefix_ + std::string(key) + "' " + std::string(problem);
}

void JsonFields::take_error(const Status& nested) {
  if (!error_ && !nested.ok()) error_ = nested.error().message;
}

void JsonFields::type_error(std::string_view key, std::string_view expected, const nlohmann::json& value) {
  fail(key, "must be " + std::string(expected) + ", got " + describe_json_value(value));
}

int64_t JsonFields::integer(std::string_view key) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    fail(key, "is missing");
    return 0;
  }
  return integer_or(key, 0);
}

int64_t JsonFields::positive_integer(std::string_view key) {
  const int64_t value = integer(key);
  if (ok() && value < 1) fail(key, "must be positive, got " + std::to_string(value));
  return value;
}

int64_t JsonFields::integer_or(std::string_view key, int64_t fallback) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return fallback;
  // nlohmann keeps 4096.0 as a float: a size written that way is a mistake worth naming.
  if (value->is_number_integer()) {
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}) {
      fail(key, "is too large");
      return fallback;
    }
    return value->get<int64_t>();
  }
  type_error(key, "an integer", *value);
  return fallback;
}

double JsonFields::number_or(std::string_view key, double fallback) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return fallback;
  if (value->is_number()) return value->get<double>();
  type_error(key, "a number", *value);
  return fallback;
}

bool JsonFields::boolean(std::string_view key) {
  if (find(key) == nullptr) {
    fail(key, "is missing");
    return false;
  }
  return boolean_or(key, false);
}

bool JsonFields::boolean_or(std::string_view key, bool fallback) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return fallback;
  if (value->is_boolean()) return value->get<bool>();
  type_error(key, "true or false", *value);
  return fallback;
}

std::string JsonFields::string(std::string_view key) {
  std::optional<std::string> value = optional_string(key);
  if (!value && find(key) == nullptr) fail(key, "is missing");
  return value.value_or(std::string());
}

std::optional<std::string> JsonFields::optional_string(std::string_view key) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_string()) return value->get<std::string>();
  type_error(key, "a string", *value);
  return std::nullopt;
}

const nlohmann::json* JsonFields::optional_of_type(std::string_view key, bool object,
                                                   std::string_view expected) {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return nullptr;
  if (object ? value->is_object() : value->is_array()) return value;
  type_error(key, expected, *value);
  return nullptr;
}

const nlohmann::json* JsonFields::optional_object(std::string_view key) {
  return optional_of_type(key, true, "an object");
}

const nlohmann::json* JsonFields::optional_array(std::string_view key) {
  return optional_of_type(key, false, "an array");
}

std::vector<std::string> JsonFields::unknown_fields() const {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : object_.items())
    if (!known_.contains(key)) unknown.push_back(key_prefix_ + key);
  return unknown;
}

void JsonFields::ignore(std::span<const std::string_view> keys) {
  for (std::string_view key : keys) known_.emplace(key);
}

void JsonFields::reject_unknown_fields() {
  for (const auto& [key, value] : object_.items()) {
    if (!known_.contains(key)) {
      if (!error_) error_ = where_ + ": unknown field '" + key_prefix_ + key + "'";
      return;
    }
  }
}

Status JsonFields::status() const {
  if (error_) return Error{*error_};
  return Status::Ok();
}

int64_t head_dim_or_derived(JsonFields& fields, int64_t hidden_size, int64_t num_attention_heads) {
  const int64_t given = fields.integer_or("head_dim", 0);
  if (given != 0 || num_attention_heads <= 0 || !fields.ok()) return given;
  if (hidden_size % num_attention_heads != 0) {
    fields.fail("hidden_size", "(" + std::to_string(hidden_size) +
                                   ") is not a multiple of num_attention_heads (" +
                                   std::to_string(num_attention_heads) + "); give head_dim explicitly");
    return 0;
  }
  return hidden_size / num_attention_heads;
}

}  // namespace pipescope::models::detail
