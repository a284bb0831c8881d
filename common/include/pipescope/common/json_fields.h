// The one reader of JSON fields behind every input pipescope parses (models, GPUs, clusters,
// calibration profiles, plan documents): typed reads that turn every defect into one message naming
// the document and the field's path, e.g.
//   cluster file 'my.json': field 'gpus_per_node' must be a positive integer, got -8
// The first error wins; later reads return harmless defaults, so parsers read straight through and
// check ok() once. The same rules everywhere: null is absent; an integer may be written as a number
// with an integral value (80e9); a required string is non-empty (an optional one may be empty).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"

namespace pipescope {

enum class JsonRange {
  kAny,
  kPositive,      // > 0
  kNonNegative,   // >= 0
  kFraction,      // (0, 1]
  kOpenFraction,  // (0, 1)
};

class JsonFieldReader {
 public:
  using json = nlohmann::json;

  // `document` names what is read, e.g. "cluster file 'my.json'" or "bundled cluster 'kalos'".
  explicit JsonFieldReader(std::string document) : document_(std::move(document)) {}

  // The document's top-level object (parse_json_object's rules); an empty object after an error.
  json parse(std::string_view text);
  // Refuses a document written by a newer pipescope instead of misreading it.
  void check_schema_version(const json& root, int supported);

  // Required fields, named by `path` (the parent's path; "" at the top level) and `key`: missing
  // (or null) is an error, and so is the wrong type or a value out of `range`.
  const json* object(const json& parent, std::string_view key, const std::string& path);
  const json* array(const json& parent, std::string_view key, const std::string& path);  // non-empty
  double number(const json& parent, std::string_view key, const std::string& path,
                JsonRange range = JsonRange::kAny);
  // Integers beyond `max` are refused (counts read into an int pass INT_MAX).
  int64_t integer(const json& parent, std::string_view key, const std::string& path,
                  JsonRange range = JsonRange::kAny, int64_t max = std::numeric_limits<int64_t>::max());
  // An integer that is not an object's member (an array element), named by its own path.
  int64_t integer_value(const json& value, const std::string& path, JsonRange range = JsonRange::kAny,
                        int64_t max = std::numeric_limits<int64_t>::max());
  bool boolean(const json& parent, std::string_view key, const std::string& path);
  // Non-empty unless `allow_empty` (a setting whose empty value means "not given").
  std::string string(const json& parent, std::string_view key, const std::string& path,
                     bool allow_empty = false);

  // Optional fields: absent or null gives nullopt (nullptr); present, the rules above.
  std::optional<double> optional_number(const json& parent, std::string_view key, const std::string& path,
                                        JsonRange range = JsonRange::kAny);
  std::optional<int64_t> optional_integer(const json& parent, std::string_view key, const std::string& path,
                                          JsonRange range = JsonRange::kAny,
                                          int64_t max = std::numeric_limits<int64_t>::max());
  std::optional<bool> optional_boolean(const json& parent, std::string_view key, const std::string& path);
  std::optional<std::string> optional_string(const json& parent, std::string_view key,
                                             const std::string& path);
  const json* optional_object(const json& parent, std::string_view key, const std::string& path);
  const json* optional_array(const json& parent, std::string_view key,
                             const std::string& path);  // may be empty

  // Fails unless `node` is a JSON object; for array elements and the like.
  bool expect_object(const json& node, const std::string& path);
  // Names the first member that is not in `allowed`: catches typos such as "gpus_per_nod".
  void only_fields(const json& object, const std::string& path,
                   std::initializer_list<std::string_view> allowed);
  void only_fields(const json& object, const std::string& path, std::span<const std::string_view> allowed);

  // "<document>: <message>", unless an error came first.
  void fail(const std::string& message);
  // "<document>: field '<path>' <problem>", e.g. problem "must be below 8, got 9".
  void fail_field(const std::string& path, std::string_view problem);
  // Takes over the error of another reader (a nested object's), if this one has none.
  void take_error(const Status& nested);
  bool ok() const { return !failed_; }
  Error error() const { return Error{message_}; }
  Status status() const;

 private:
  const json* present(const json& parent, std::string_view key) const;  // null when absent or null
  const json* member(const json& parent, std::string_view key, const std::string& path);

  std::string document_;
  bool failed_ = false;
  std::string message_;
};

// "a.b" from ("a", "b"); the root path is empty.
std::string field_path(const std::string& parent, std::string_view key);
std::string index_path(const std::string& parent, size_t index);

}  // namespace pipescope
