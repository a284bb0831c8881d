// The bundled descriptions and loading by name or path, in either format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pipescope/models/model_catalog.h"
#include "pipescope/models/model_json.h"
#include "pipescope/models/parameter_count.h"

namespace pipescope::models {
namespace {

using ::testing::HasSubstr;

// A fresh directory under the system temp dir, removed with the fixture.
class ModelFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("pipescope-models-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  std::filesystem::path dir_;
};

const char* const kTinyHfConfig = R"({"model_type": "llama", "hidden_size": 256,
  "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 688, "vocab_size": 1000})";

TEST(ModelCatalog, BundlesTheElevenModels) {
  EXPECT_EQ(list_bundled_models(),
            (std::vector<std::string>{"gpt3-175b", "internlm-123b", "internlm2-20b", "internlm2-7b",
                                      "llama2-13b", "llama2-70b", "llama2-7b", "llama3-405b", "llama3-70b",
                                      "llama3-8b", "mixtral-8x7b"}));
}

TEST(ModelCatalog, TheStudys123BStatesWhatItAssumes) {
  // The 123B's shape is not published: the description says what it takes from InternLM 104B and
  // InternEvo's layer, and each assumption reaches the plan's notes.
  Expected<ModelDesc> m = load_bundled_model("internlm-123b");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->hidden_size, 10240);
  EXPECT_EQ(m->num_attention_heads, 80);
  EXPECT_EQ(m->ffn_hidden_size, 27392);  // InternEvo's FeedForward: int(10240 * 8/3) rounded up to 256
  EXPECT_EQ(m->num_layers, 96);
  EXPECT_TRUE(m->qkv_bias);
  EXPECT_TRUE(m->attention_output_bias);
  EXPECT_FALSE(m->mlp_bias);
  ASSERT_EQ(m->notes.size(), 4u);
  EXPECT_THAT(m->notes[0], HasSubstr("not published"));
  EXPECT_THAT(m->source, HasSubstr("2403.07648"));
}

TEST(ModelCatalog, AssumptionsAreAListOfStrings) {
  const std::string base = R"({"schema_version": 1, "name": "m", "vocab_size": 1000, "hidden_size": 256,
    "num_layers": 2, "num_attention_heads": 4, "ffn_hidden_size": 688, "mlp": "swiglu", "norm": "rmsnorm",
    "position_embedding": "rope", "tied_embeddings": false)";
  Expected<ModelDesc> m = parse_model_json(base + R"(, "assumptions": ["a", "b"]})", "m.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->notes, (std::vector<std::string>{"a", "b"}));
  Expected<ModelDesc> again = parse_model_json(to_model_json(*m), "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->notes, m->notes);
  Expected<ModelDesc> bad = parse_model_json(base + R"(, "assumptions": ["a", 3]})", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("assumptions"));
  EXPECT_THAT(bad.error().message, HasSubstr("must be a list of strings, got"));
}

TEST(ModelCatalog, EveryBundledModelLoadsNamedForItsFileAndStatesItsSource) {
  for (const std::string& name : list_bundled_models()) {
    SCOPED_TRACE(name);
    Expected<ModelDesc> m = load_model(name);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->name, name);
    EXPECT_FALSE(m->source.empty());
    EXPECT_TRUE(validate(*m).ok());
  }
}

TEST(ModelCatalog, BundledNumbersAreThePublishedOnes) {
  Expected<ModelDesc> m = load_bundled_model("llama3-405b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->hidden_size, 16384);
  EXPECT_EQ(m->num_layers, 126);
  EXPECT_EQ(m->num_attention_heads, 128);
  EXPECT_EQ(m->num_kv_heads, 8);
  EXPECT_EQ(m->ffn_hidden_size, 53248);
  EXPECT_EQ(m->vocab_size, 128256);
}

TEST(ModelCatalog, UnknownNameListsTheBundledOnes) {
  Expected<ModelDesc> m = load_model("llama9-1t");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.error().message, HasSubstr("model 'llama9-1t' is neither a bundled model"));
  EXPECT_THAT(m.error().message, HasSubstr("llama2-7b"));
}

TEST(ModelCatalog, DescriptionsRoundTripThroughJson) {
  for (const std::string& name : list_bundled_models()) {
    Expected<ModelDesc> m = load_bundled_model(name);
    ASSERT_TRUE(m.ok());
    const std::string json = to_model_json(*m);
    Expected<ModelDesc> again = parse_model_json(json, "roundtrip");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(to_model_json(*again), json);
  }
}

TEST_F(ModelFiles, LoadsAHuggingFaceCheckpointDirectoryNamedForIt) {
  write("tiny-llama/config.json", kTinyHfConfig);
  Expected<ModelDesc> m = load_model((dir_ / "tiny-llama").string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->name, "tiny-llama");
  EXPECT_EQ(m->architecture, "llama");
  EXPECT_THAT(m->source, HasSubstr("config.json"));
}

TEST_F(ModelFiles, LoadsAPipescopeDescriptionByPath) {
  Expected<ModelDesc> bundled = load_bundled_model("mixtral-8x7b");
  ASSERT_TRUE(bundled.ok());
  bundled->name = "my-mixtral";
  Expected<ModelDesc> m = load_model(write("my-mixtral.json", to_model_json(*bundled)));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->name, "my-mixtral");
  EXPECT_EQ(m->moe.top_k, 2);
}

TEST_F(ModelFiles, AFileOfNeitherFormatSaysWhatIsMissing) {
  Expected<ModelDesc> m = load_model(write("other.json", R"({"hidden_size": 4096})"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.error().message, HasSubstr("neither a Hugging Face config.json (no 'model_type')"));
}

TEST_F(ModelFiles, ADirectoryWithoutConfigIsRefused) {
  Expected<ModelDesc> m = load_model(dir_.string());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.error().message, HasSubstr("checkpoint directory with a config.json"));
}

std::string pipescope_error(const std::string& json) {
  Expected<ModelDesc> m = parse_model_json(json, "my.json");
  EXPECT_FALSE(m.ok());
  return m.ok() ? std::string() : m.error().message;
}

const char* const kMinimal = R"({"schema_version": 1, "name": "m", "vocab_size": 1000,
  "hidden_size": 256, "num_layers": 2, "num_attention_heads": 4, "ffn_hidden_size": 1024,
  "mlp": "gelu", "norm": "layernorm", "position_embedding": "rope", "tied_embeddings": true)";

TEST(ModelJson, MinimalDescriptionTakesDefaults) {
  Expected<ModelDesc> m = parse_model_json(std::string(kMinimal) + "}", "my.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->num_kv_heads, 4);
  EXPECT_EQ(m->head_dim, 64);
  EXPECT_FALSE(m->is_moe());
}

TEST(ModelJson, UnknownFieldIsNamed) {
  EXPECT_THAT(pipescope_error(std::string(kMinimal) + R"(, "num_expert": 8})"),
              HasSubstr("my.json: unknown field 'num_expert'"));
}

TEST(ModelJson, UnknownMoeFieldIsNamedWithItsPath) {
  EXPECT_THAT(
      pipescope_error(
          std::string(kMinimal) +
          R"(, "moe": {"num_experts": 4, "top_k": 1, "expert_ffn_hidden_size": 512, "capacity": 1}})"),
      HasSubstr("unknown field 'moe.capacity'"));
}

TEST(ModelJson, WrongTypeIsNamed) {
  std::string json = std::string(kMinimal) + "}";
  json.replace(json.find("\"vocab_size\": 1000"), 18, "\"vocab_size\": 1000.5");
  EXPECT_THAT(pipescope_error(json), HasSubstr("field 'vocab_size' must be an integer, got 1000.5"));
}

TEST(ModelJson, UnknownMlpKindIsNamed) {
  std::string json = std::string(kMinimal) + "}";
  json.replace(json.find("\"gelu\""), 6, "\"relu\"");
  EXPECT_THAT(pipescope_error(json), HasSubstr("field 'mlp' is 'relu', expected 'gelu' or 'swiglu'"));
}

TEST(ModelJson, AlibiPositionsAddNoParametersAndAnUnknownKindIsNamed) {
  std::string json = std::string(kMinimal) + "}";
  const Expected<ModelDesc> rope = parse_model_json(json, "my.json");
  json.replace(json.find("\"rope\""), 6, "\"alibi\"");
  const Expected<ModelDesc> alibi = parse_model_json(json, "my.json");
  ASSERT_TRUE(rope.ok() && alibi.ok());
  EXPECT_EQ(alibi->position, PositionKind::kAlibi);
  EXPECT_EQ(model_parameters(*alibi).total(), model_parameters(*rope).total());
  json.replace(json.find("\"alibi\""), 7, "\"sinusoid\"");
  EXPECT_THAT(pipescope_error(json),
              HasSubstr("field 'position_embedding' is 'sinusoid', expected 'rope', 'learned' or 'alibi'"));
}

TEST(ModelJson, NewerSchemaIsRefused) {
  std::string json = std::string(kMinimal) + "}";
  json.replace(json.find("\"schema_version\": 1"), 19, "\"schema_version\": 2");
  EXPECT_THAT(pipescope_error(json), HasSubstr("field 'schema_version' is 2"));
}

TEST(ModelJson, InvalidValuesAreNamedAfterParsing) {
  std::string json = std::string(kMinimal) + R"(, "num_kv_heads": 3})";
  EXPECT_THAT(pipescope_error(json), HasSubstr("field 'num_kv_heads' (3) does not divide"));
}

}  // namespace
}  // namespace pipescope::models
