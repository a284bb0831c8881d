// Reads the hardware JSON documents (GPU, cluster, calibration profile) field by field and turns
// every defect into one message that names the document and the field path, e.g.
//   cluster file 'my.json': field 'gpus_per_node' must be a positive integer, got -8
// The first error wins; later reads return harmless defaults, so parsers read straight through
// and check ok() once instead of testing every field.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipescope/common/expected.h"
#include "pipescope/common/text_file.h"

namespace pipescope::planner::detail {

using nlohmann::json;

enum class Range {
  kPositive,      // > 0
  kNonNegative,   // >= 0
  kFraction,      // (0, 1]
  kOpenFraction,  // (0, 1)
};

class JsonReader {
 public:
  // `document` names what is read, e.g. "cluster file 'my.json'" or "bundled cluster 'kalos'".
  explicit JsonReader(std::string document) : document_(std::move(document)) {}

  json parse(std::string_view text);
  // Refuses a document written by a newer pipescope instead of misreading it.
  void check_schema_version(const json& root, int supported);

  // Fails unless `node` is a JSON object; for array elements and the like.
  bool expect_object(const json& node, const std::string& path);
  const json* object(const json& parent, std::string_view key, const std::string& path);
  const json* array(const json& parent, std::string_view key, const std::string& path);
  double number(const json& parent, std::string_view key, const std::string& path, Range range);
  // Integers beyond `max` are refused (counts read into an int pass INT_MAX).
  int64_t integer(const json& parent, std::string_view key, const std::string& path, Range range,
                  int64_t max = std::numeric_limits<int64_t>::max());
  std::string string(const json& parent, std::string_view key, const std::string& path);
  std::optional<std::string> optional_string(const json& parent, std::string_view key,
                                             const std::string& path);
  // Names the first member that is not in `allowed`: catches typos such as "gpus_per_nod".
  void only_fields(const json& object, const std::string& path,
                   std::initializer_list<std::string_view> allowed);

  void fail(const std::string& message);
  bool ok() const { return !failed_; }
  Error error() const { return Error{message_}; }

 private:
  const json* member(const json& parent, std::string_view key, const std::string& path);

  std::string document_;
  bool failed_ = false;
  std::string message_;
};

// "a.b" from ("a", "b"); the root path is empty.
std::string field_path(const std::string& parent, std::string_view key);
std::string index_path(const std::string& parent, size_t index);

// A command-line value names a bundled entry unless it looks like a file.
bool looks_like_path(std::string_view name_or_path);
using pipescope::read_text_file;  // common/text_file.h

}  // namespace pipescope::planner::detail
