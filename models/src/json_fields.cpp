#include "json_fields.h"

#include <utility>

namespace pipescope::models::detail {

JsonFields::JsonFields(const nlohmann::json& object, std::string where, std::string key_prefix)
    : object_(object),
      path_(key_prefix.empty() ? std::string() : key_prefix.substr(0, key_prefix.size() - 1)),
      key_prefix_(std::move(key_prefix)),
      reader_(std::move(where)) {}

void JsonFields::fail(std::string_view key, std::string_view problem) {
  reader_.fail_field(field_path(path_, key), problem);
}

void JsonFields::take_error(const Status& nested) { reader_.take_error(nested); }

int64_t JsonFields::integer(std::string_view key) {
  mark(key);
  return reader_.integer(object_, key, path_);
}

int64_t JsonFields::positive_integer(std::string_view key) {
  mark(key);
  return reader_.integer(object_, key, path_, JsonRange::kPositive);
}

int64_t JsonFields::integer_or(std::string_view key, int64_t fallback) {
  mark(key);
  return reader_.optional_integer(object_, key, path_).value_or(fallback);
}

double JsonFields::number_or(std::string_view key, double fallback) {
  mark(key);
  return reader_.optional_number(object_, key, path_).value_or(fallback);
}

bool JsonFields::boolean(std::string_view key) {
  mark(key);
  return reader_.boolean(object_, key, path_);
}

bool JsonFields::boolean_or(std::string_view key, bool fallback) {
  mark(key);
  return reader_.optional_boolean(object_, key, path_).value_or(fallback);
}

std::string JsonFields::string(std::string_view key) {
  mark(key);
  return reader_.string(object_, key, path_);
}

std::optional<std::string> JsonFields::optional_string(std::string_view key) {
  mark(key);
  return reader_.optional_string(object_, key, path_);
}

const nlohmann::json* JsonFields::optional_object(std::string_view key) {
  mark(key);
  return reader_.optional_object(object_, key, path_);
}

const nlohmann::json* JsonFields::optional_array(std::string_view key) {
  mark(key);
  return reader_.optional_array(object_, key, path_);
}

std::vector<std::string> JsonFields::unknown_fields() const {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : object_.items())
    if (!known_.contains(key)) unknown.push_back(key_prefix_ + key);
  return unknown;
}

void JsonFields::ignore(std::span<const std::string_view> keys) {
  for (std::string_view key : keys) mark(key);
}

void JsonFields::reject_unknown_fields() {
  for (const auto& [key, value] : object_.items()) {
    if (!known_.contains(key)) {
      reader_.fail("unknown field '" + key_prefix_ + key + "'");
      return;
    }
  }
}

Status JsonFields::status() const { return reader_.status(); }

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
