// A JSON object's fields read through the project's one field reader (common/json_fields.h), bound
// to the object and keeping which keys were read, so that a description format (model_json.cpp,
// hf_config.cpp) can refuse or list the fields it does not know. Reads never fail on the spot: the
// first problem is kept and every later read returns a default, so a parser reads all its fields
// in a row and checks status() once. Internal to pipescope_models.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"
#include "pipescope/common/json_document.h"
#include "pipescope/common/json_fields.h"

namespace pipescope::models::detail {

class JsonFields {
 public:
  // `where` prefixes every message, e.g. "config.json (model_type 'llama')"; `key_prefix`
  // names a nested object's fields the way users see them ("moe." gives 'moe.top_k').
  JsonFields(const nlohmann::json& object, std::string where, std::string key_prefix = "");

  // Required fields: missing or of the wrong type is an error naming the field.
  int64_t integer(std::string_view key);
  // A required size: an integer >= 1, named in the file's own words when it is not.
  int64_t positive_integer(std::string_view key);
  bool boolean(std::string_view key);
  std::string string(std::string_view key);
  // Optional fields: absent or null gives the fallback; present with the wrong type is an error.
  int64_t integer_or(std::string_view key, int64_t fallback);
  double number_or(std::string_view key, double fallback);
  bool boolean_or(std::string_view key, bool fallback);
  std::optional<std::string> optional_string(std::string_view key);
  // The field when it is an object (an array); absent or null gives nullptr.
  const nlohmann::json* optional_object(std::string_view key);
  const nlohmann::json* optional_array(std::string_view key);

  // Marks fields as known without reading them (harmless extras such as rms_norm_eps).
  void ignore(std::span<const std::string_view> keys);
  // Records an error about a field that was read fine but has a value the caller rejects.
  void fail(std::string_view key, std::string_view problem);
  // Takes over the error of a nested object's reader, if it has one and this one has none.
  void take_error(const Status& nested);
  // An error naming the first field (in key order) no read or ignore() above has touched.
  void reject_unknown_fields();
  // The fields (in key order) no read or ignore() above has touched.
  std::vector<std::string> unknown_fields() const;

  bool ok() const { return reader_.ok(); }
  Status status() const;

 private:
  void mark(std::string_view key) { known_.emplace(key); }

  const nlohmann::json& object_;
  std::string path_;        // the object's path: "" at the top level, "moe" for 'moe.top_k'
  std::string key_prefix_;  // path_ and a dot, or empty
  JsonFieldReader reader_;
  std::set<std::string, std::less<>> known_;
};

// head_dim when the document gives it, else hidden_size / num_attention_heads; when that does
// not divide, an error on hidden_size (a silently floored head size would misprice attention).
int64_t head_dim_or_derived(JsonFields& fields, int64_t hidden_size, int64_t num_attention_heads);

}  // namespace pipescope::models::detail
