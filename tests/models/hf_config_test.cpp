// Hugging Face config.json of every supported family (the published configs of real
// checkpoints, abridged where noted), and malformed ones whose errors must name the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "pipescope/models/hf_config.h"
#include "pipescope/models/parameter_count.h"

namespace pipescope::models {
namespace {

using ::testing::HasSubstr;

ModelDesc parse_ok(const std::string& json) {
  Expected<ModelDesc> m = parse_hf_config(json, "test-model", "config.json");
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : ModelDesc{};
}

std::string parse_error(const std::string& json) {
  Expected<ModelDesc> m = parse_hf_config(json, "test-model", "config.json");
  EXPECT_FALSE(m.ok());
  return m.ok() ? std::string() : m.error().message;
}

// meta-llama/Llama-2-7b-hf
const char* const kLlama2_7b = R"({
  "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
  "intermediate_size": 11008, "max_position_embeddings": 4096, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "tie_word_embeddings": false, "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})";

TEST(HfConfig, LlamaReadsTheLlama2Checkpoint) {
  const ModelDesc m = parse_ok(kLlama2_7b);
  EXPECT_EQ(m.name, "test-model");
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.num_kv_heads, 32);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.mlp, MlpKind::kSwiglu);
  EXPECT_EQ(m.norm, NormKind::kRmsNorm);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(model_parameters(m).total(), 6'738'415'616);
}

TEST(HfConfig, HiddenSizeThatHeadsDoNotDivideNeedsAnExplicitHeadDim) {
  // 4097 / 32 would floor to a head size of 128 and misprice attention: refused unless given.
  const std::string config = R"({"model_type": "llama", "hidden_size": 4097, "num_attention_heads": 32,
    "num_hidden_layers": 32, "intermediate_size": 11008, "vocab_size": 32000)";
  EXPECT_THAT(parse_error(config + "}"), HasSubstr("field 'hidden_size' (4097) is not a multiple of "
                                                   "num_attention_heads (32); give head_dim explicitly"));
  EXPECT_EQ(parse_ok(config + R"(, "head_dim": 128})").head_dim, 128);
}

TEST(HfConfig, MistralIsLlamaWithGroupedQueries) {
  // mistralai/Mistral-7B-v0.1: 32 layers of the llama3-8b shape, vocabulary 32000:
  // 218,112,000 x 32 + 2·32000·4096 + 4096 = 7,241,732,096.
  const ModelDesc m = parse_ok(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
    "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(model_parameters(m).total(), 7'241'732'096);
}

TEST(HfConfig, MixtralMapsLocalExpertsAndExpertsPerToken) {
  const ModelDesc m = parse_ok(R"({
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 14336);
  EXPECT_EQ(model_parameters(m).total(), 46'702'792'704);
}

TEST(HfConfig, Qwen2HasQkvBiases) {
  // Qwen/Qwen2-7B. Layer: q 3584² + k, v 2·3584·512 + o 3584² + q/k/v biases 3584 + 2·512
  // = 29,364,736; SwiGLU 3·3584·18944 = 203,685,888; norms 7,168 -> 233,057,792 x 28
  // + 2·152064·3584 + 3584 = 7,615,616,512 (the published 7.6B).
  const ModelDesc m = parse_ok(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.37.2", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 152064})");
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_FALSE(m.attention_output_bias);
  EXPECT_EQ(model_parameters(m).total(), 7'615'616'512);
}

TEST(HfConfig, InternLm2ReadsItsBiasSwitch) {
  const ModelDesc m = parse_ok(R"({
    "architectures": ["InternLM2ForCausalLM"], "attn_implementation": "eager",
    "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config"}, "bias": false,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "internlm2", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "pad_token_id": 2, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 2.0, "type": "dynamic"}, "rope_theta": 1000000,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.33.2",
    "use_cache": true, "vocab_size": 92544})");
  EXPECT_FALSE(m.qkv_bias);
  EXPECT_EQ(model_parameters(m).total(), 7'737'708'544);  // as the bundled internlm2-7b
}

TEST(HfConfig, GptNeoXIsGeluLayerNormWithBiases) {
  // EleutherAI/gpt-neox-20b: 44 x (12h² + 13h) + 2·50432·6144 + 2·6144 = 20,554,567,680.
  const ModelDesc m = parse_ok(R"({
    "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0,
    "hidden_act": "gelu_fast", "hidden_size": 6144, "initializer_range": 0.02,
    "intermediate_size": 24576, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
    "model_type": "gpt_neox", "num_attention_heads": 64, "num_hidden_layers": 44,
    "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": false,
    "torch_dtype": "float16", "transformers_version": "4.24.0.dev0", "use_cache": true,
    "use_parallel_residual": true, "vocab_size": 50432})");
  EXPECT_EQ(m.mlp, MlpKind::kGelu);
  EXPECT_EQ(m.norm, NormKind::kLayerNorm);
  EXPECT_TRUE(m.qkv_bias && m.attention_output_bias && m.mlp_bias);
  EXPECT_EQ(model_parameters(m).total(), 20'554'567'680);
}

TEST(HfConfig, ArchitecturesNameTheFamilyWhenModelTypeIsAbsent) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("model_type": "llama",)"), std::string(R"("model_type": "llama",)").size(), "");
  EXPECT_EQ(parse_ok(json).architecture, "llama");
}

TEST(HfConfig, UnknownModelTypeIsNamed) {
  const std::string message = parse_error(R"({"model_type": "falcon", "hidden_size": 4544})");
  EXPECT_THAT(message, HasSubstr("model_type 'falcon' is not supported"));
  EXPECT_THAT(message, HasSubstr("llama, mistral, mixtral, qwen2, internlm2, gpt_neox"));
}

TEST(HfConfig, MissingModelTypeAndArchitecturesIsNamed) {
  EXPECT_THAT(parse_error(R"({"hidden_size": 4096})"), HasSubstr("field 'model_type' is missing"));
}

TEST(HfConfig, MissingHiddenSizeIsNamed) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("hidden_size": 4096,)"), std::string(R"("hidden_size": 4096,)").size(), "");
  EXPECT_THAT(parse_error(json), HasSubstr("field 'hidden_size' is missing"));
}

TEST(HfConfig, StringWhereANumberBelongsIsNamed) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("intermediate_size": 11008)"),
               std::string(R"("intermediate_size": 11008)").size(), R"("intermediate_size": "11008")");
  EXPECT_THAT(parse_error(json),
              HasSubstr("field 'intermediate_size' must be a positive integer, got \"11008\""));
}

TEST(HfConfig, ASizeBelowOneIsNamedInTheFilesOwnWords) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("intermediate_size": 11008)"),
               std::string(R"("intermediate_size": 11008)").size(), R"("intermediate_size": -11008)");
  EXPECT_THAT(parse_error(json),
              HasSubstr("field 'intermediate_size' must be a positive integer, got -11008"));
}

// Real config.json files carry settings of their training code: those known to change nothing are
// left out and named in the notes; fields pipescope does not know are taken as changing nothing,
// and named so that a user can check; those known to change the cost unpriced are refused.
TEST(HfConfig, FieldsThatChangeNothingAreLeftOutAndNamedInTheNotes) {
  std::string json = kLlama2_7b;
  json.insert(json.find('{') + 1, R"("use_flash_attn": true, "moe_layer_freq": 2, )");
  const ModelDesc m = parse_ok(json);
  EXPECT_EQ(model_parameters(m).total(), 6'738'415'616);  // as without them
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_THAT(m.notes[0], HasSubstr("settings of the training or inference code"));
  EXPECT_THAT(m.notes[0], HasSubstr("use_flash_attn"));
  EXPECT_THAT(m.notes[1],
              HasSubstr("fields pipescope does not know were taken as changing nothing: moe_layer_freq"));
  EXPECT_TRUE(parse_ok(kLlama2_7b).notes.empty());
}

TEST(HfConfig, AFieldThatChangesTheCostUnpricedIsRefusedByName) {
  std::string json = kLlama2_7b;
  json.insert(json.find('{') + 1, R"("kv_lora_rank": 512, )");
  const std::string message = parse_error(json);
  EXPECT_THAT(message, HasSubstr("field 'kv_lora_rank' describes multi-head latent attention"));
  EXPECT_THAT(message, HasSubstr("does not price"));
}

// Sliding-window attention, as each family switches it on.
std::string with_fields(const std::string& base, const std::string& fields) {
  std::string json = base;
  json.insert(json.find('{') + 1, fields + ", ");
  return json;
}

TEST(HfConfig, MistralsSlidingWindowCoversEveryLayer) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("llama")"), 7, R"("mistral")");
  const std::string llama_only = R"("pretraining_tp": 1, )";
  json.erase(json.find(llama_only), llama_only.size());
  const ModelDesc m = parse_ok(with_fields(json, R"("sliding_window": 4096)"));
  ASSERT_EQ(m.attention_window.size(), 32u);
  for (int64_t w : m.attention_window) EXPECT_EQ(w, 4096);
  EXPECT_THAT(m.notes.back(), HasSubstr("32 of 32 layers attend within 4096 tokens"));
  EXPECT_TRUE(parse_ok(with_fields(json, R"("sliding_window": null)")).attention_window.empty());
}

TEST(HfConfig, Qwen2SlidesOnlyFromMaxWindowLayersAndOnlyWhenSwitchedOn) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("llama")"), 7, R"("qwen2")");
  const std::string llama_only = R"("pretraining_tp": 1, )";
  json.erase(json.find(llama_only), llama_only.size());
  EXPECT_TRUE(parse_ok(with_fields(json, R"("sliding_window": 4096, "use_sliding_window": false)"))
                  .attention_window.empty());
  const ModelDesc m = parse_ok(
      with_fields(json, R"("sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28)"));
  ASSERT_EQ(m.attention_window.size(), 32u);
  EXPECT_EQ(m.window_of(27), 0);
  EXPECT_EQ(m.window_of(28), 4096);
  EXPECT_EQ(m.window_of(31), 4096);
}

TEST(HfConfig, LayerTypesNameEachLayersAttention) {
  std::string types = R"("layer_types": [)";
  for (int i = 0; i < 32; ++i)
    types += std::string(i ? ", " : "") + (i % 2 ? R"("full_attention")" : R"("sliding_attention")");
  types += "]";
  const ModelDesc m = parse_ok(with_fields(kLlama2_7b, R"("sliding_window": 1024, )" + types));
  EXPECT_EQ(m.window_of(0), 1024);
  EXPECT_EQ(m.window_of(1), 0);
  EXPECT_THAT(
      parse_error(with_fields(kLlama2_7b, R"("sliding_window": 1024, "layer_types": ["full_attention"])")),
      HasSubstr("field 'layer_types' has 1 entries for 32 layers"));
  EXPECT_THAT(parse_error(with_fields(kLlama2_7b, types)),
              HasSubstr("field 'sliding_window' must be a positive number of tokens"));
  std::string odd = types;
  odd.replace(odd.find("sliding_attention"), 17, "chunked_attention");
  EXPECT_THAT(parse_error(with_fields(kLlama2_7b, R"("sliding_window": 1024, )" + odd)),
              HasSubstr("entry 0 is the string \"chunked_attention\""));
}

TEST(HfConfig, AnActivationThisFamilyDoesNotModelIsNamed) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("silu")"), 6, R"("gelu")");
  EXPECT_THAT(parse_error(json), HasSubstr("field 'hidden_act' is 'gelu'"));
}

TEST(HfConfig, KvHeadsThatDoNotDivideTheHeadsAreNamed) {
  std::string json = kLlama2_7b;
  json.replace(json.find(R"("num_key_value_heads": 32)"), std::string(R"("num_key_value_heads": 32)").size(),
               R"("num_key_value_heads": 6)");
  EXPECT_THAT(parse_error(json), HasSubstr("field 'num_key_value_heads' (6) does not divide"));
}

TEST(HfConfig, MixtralWithoutExpertsIsNamed) {
  EXPECT_THAT(parse_error(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 32000,
      "num_experts_per_tok": 2})"),
              HasSubstr("field 'num_local_experts' is missing"));
}

TEST(HfConfig, NotJsonNamesTheFile) {
  EXPECT_THAT(parse_error("{\"model_type\": "), HasSubstr("config.json: not valid JSON"));
}

TEST(HfConfig, ANumberBeyondDoubleIsNamedNotThrown) {
  EXPECT_THAT(parse_error(R"({"model_type": "llama", "hidden_size": 1e400})"),
              HasSubstr("config.json: holds a number out of range"));
}

TEST(HfConfig, SupportedTypesAreListed) { EXPECT_EQ(supported_hf_model_types().size(), 6u); }

}  // namespace
}  // namespace pipescope::models
