// The one JSON field reader's rules, which every input (models, GPUs, clusters, profiles, plans,
// benchmark results) inherits: what is accepted, what is refused, and how the refusal reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "pipescope/common/json_fields.h"

namespace pipescope {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// The message of the first read of `doc`'s field "x" that `read` does, or "(read)".
template <typename Read>
std::string error_of(const char* doc, Read read) {
  JsonFieldReader reader("file 'f.json'");
  const json root = reader.parse(doc);
  read(reader, root);
  return reader.ok() ? std::string("(read)") : reader.error().message;
}

TEST(JsonFieldReader, AnIntegerMayBeWrittenAsAnIntegralNumberButNotAFraction) {
  JsonFieldReader reader("f");
  const json root = reader.parse(R"({"a": 80e9, "b": 4096.0, "c": 7})");
  EXPECT_EQ(reader.integer(root, "a", ""), 80'000'000'000);
  EXPECT_EQ(reader.integer(root, "b", ""), 4096);
  EXPECT_EQ(reader.integer(root, "c", "", JsonRange::kPositive), 7);
  EXPECT_TRUE(reader.ok());
  EXPECT_EQ(error_of(R"({"x": 2.5})", [](JsonFieldReader& r, const json& j) { r.integer(j, "x", ""); }),
            "file 'f.json': field 'x' must be an integer, got 2.5");
  EXPECT_EQ(error_of(R"({"m": {"x": 9}})",
                     [](JsonFieldReader& r, const json& j) {
                       r.integer(*r.object(j, "m", ""), "x", "m", JsonRange::kAny, 8);
                     }),
            "file 'f.json': field 'm.x' must be an integer no larger than 8, got 9");
  EXPECT_EQ(error_of(R"({"x": 18446744073709551615})",
                     [](JsonFieldReader& r, const json& j) { r.integer(j, "x", ""); }),
            "file 'f.json': field 'x' must be an integer no larger than 9223372036854775807, got "
            "18446744073709551615");
  EXPECT_EQ(error_of(R"({"x": [1, "two"]})",
                     [](JsonFieldReader& r, const json& j) {
                       const json* list = r.array(j, "x", "");
                       for (size_t i = 0; i < list->size(); ++i)
                         r.integer_value((*list)[i], index_path("x", i));
                     }),
            "file 'f.json': field 'x[1]' must be an integer, got \"two\"");
}

TEST(JsonFieldReader, NullIsAbsentEverywhere) {
  JsonFieldReader reader("f");
  const json root = reader.parse(R"({"n": null})");
  EXPECT_FALSE(reader.optional_integer(root, "n", "").has_value());
  EXPECT_FALSE(reader.optional_string(root, "n", "").has_value());
  EXPECT_EQ(reader.optional_object(root, "n", ""), nullptr);
  EXPECT_TRUE(reader.ok());
  EXPECT_EQ(error_of(R"({"x": null})", [](JsonFieldReader& r, const json& j) { r.number(j, "x", ""); }),
            "file 'f.json': field 'x' is missing");
}

TEST(JsonFieldReader, RangesStringsAndTypesAreNamedWithTheValueAsWritten) {
  EXPECT_EQ(error_of(R"({"x": 0})",
                     [](JsonFieldReader& r, const json& j) { r.number(j, "x", "", JsonRange::kPositive); }),
            "file 'f.json': field 'x' must be a positive number, got 0");
  EXPECT_EQ(error_of(R"({"x": 1.5})",
                     [](JsonFieldReader& r, const json& j) { r.number(j, "x", "", JsonRange::kFraction); }),
            "file 'f.json': field 'x' must be a fraction in (0, 1], got 1.5");
  EXPECT_EQ(error_of(R"({"x": ""})", [](JsonFieldReader& r, const json& j) { r.string(j, "x", ""); }),
            "file 'f.json': field 'x' must be a non-empty string, got \"\"");
  EXPECT_EQ(error_of(R"({"x": ""})", [](JsonFieldReader& r, const json& j) { r.string(j, "x", "", true); }),
            "(read)");
  EXPECT_EQ(
      error_of(R"({"x": ""})", [](JsonFieldReader& r, const json& j) { r.optional_string(j, "x", ""); }),
      "(read)");
  EXPECT_EQ(error_of(R"({"x": 1})", [](JsonFieldReader& r, const json& j) { r.boolean(j, "x", ""); }),
            "file 'f.json': field 'x' must be true or false, got 1");
  EXPECT_EQ(error_of(R"({"x": 3})", [](JsonFieldReader& r, const json& j) { r.optional_array(j, "x", ""); }),
            "file 'f.json': field 'x' must be an array, got 3");
  EXPECT_EQ(error_of(R"({"x": []})", [](JsonFieldReader& r, const json& j) { r.array(j, "x", ""); }),
            "file 'f.json': field 'x' must be a non-empty array, got []");
  EXPECT_THAT(error_of(R"({"gpu": 1, "gpus_per_nod": 8})",
                       [](JsonFieldReader& r, const json& j) {
                         r.only_fields(j, "", {"gpu", "gpus_per_node"});
                       }),
              HasSubstr("unknown field 'gpus_per_nod' (known here: gpu, gpus_per_node)"));
  EXPECT_THAT(error_of("[1]", [](JsonFieldReader&, const json&) {}),
              HasSubstr("must be a JSON object, got an array"));
}

TEST(JsonFieldReader, TheFirstErrorWinsAndANestedReadersErrorIsTakenOver) {
  JsonFieldReader reader("f");
  const json root = reader.parse(R"({"a": "x", "b": "y"})");
  reader.integer(root, "a", "");
  reader.integer(root, "b", "");
  EXPECT_EQ(reader.error().message, "f: field 'a' must be an integer, got \"x\"");
  JsonFieldReader outer("g");
  outer.take_error(reader.status());
  EXPECT_EQ(outer.error().message, "f: field 'a' must be an integer, got \"x\"");
  outer.take_error(Error{"later"});
  EXPECT_EQ(outer.error().message, "f: field 'a' must be an integer, got \"x\"");
}

}  // namespace
}  // namespace pipescope
