#include "pipescope/models/hf_config.h"

#include <algorithm>
#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "json_fields.h"
#include "model_parsers.h"

namespace pipescope::models {
namespace {

using detail::JsonFields;

// Fields of transformers' PretrainedConfig and of generation, tokenizer, serialization and
// numerics settings: none changes parameters, FLOPs or stored activations.
constexpr std::string_view kHarmlessFields[] = {
    "_name_or_path",
    "_attn_implementation",
    "_attn_implementation_autoset",
    "add_cross_attention",
    "architectures",
    "attn_implementation",
    "auto_map",
    "bad_words_ids",
    "begin_suppress_tokens",
    "bos_token_id",
    "chunk_size_feed_forward",
    "cross_attention_hidden_size",
    "decoder_start_token_id",
    "diversity_penalty",
    "do_sample",
    "dtype",
    "early_stopping",
    "encoder_no_repeat_ngram_size",
    "eos_token_id",
    "exponential_decay_length_penalty",
    "finetuning_task",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "id2label",
    "initializer_range",
    "is_decoder",
    "is_encoder_decoder",
    "label2id",
    "length_penalty",
    "max_length",
    "min_length",
    "model_type",
    "no_repeat_ngram_size",
    "num_beam_groups",
    "num_beams",
    "num_return_sequences",
    "output_attentions",
    "output_hidden_states",
    "output_scores",
    "pad_token_id",
    "prefix",
    "problem_type",
    "pruned_heads",
    "quantization_config",
    "remove_invalid_values",
    "repetition_penalty",
    "return_dict",
    "return_dict_in_generate",
    "sep_token_id",
    "suppress_tokens",
    "task_specific_params",
    "temperature",
    "tf_legacy_loss",
    "tie_encoder_decoder",
    "tokenizer_class",
    "top_k",
    "top_p",
    "torch_dtype",
    "torchscript",
    "transformers_version",
    "typical_p",
    "use_bfloat16",
    "use_cache",
    // Position encoding and norm numerics: rotary has no parameters and stores nothing extra.
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
};

// Settings of the training or inference code that real config.json files carry (kernel choices,
// numerics, context extension): none changes parameters, FLOPs or stored activations. When a
// file has them, the plan's notes name them.
constexpr std::string_view kRuntimeFields[] = {
    "use_flash_attn",
    "use_flash_attention_2",
    "_flash_attn_2_enabled",
    "flash_attn",
    "fused_bias_fc",
    "fused_dropout_add_ln",
    "fused_mlp",
    "softmax_in_fp32",
    "bf16",
    "fp16",
    "fp32",
    "residual_in_fp32",
    "use_dynamic_ntk",
    "use_logn_attn",
    "use_cache_kernel",
    "use_cache_quantization",
    "rope_type",
    "partial_rotary_factor",
    "use_scaled_rope",
    "original_max_position_embeddings",
    "seq_length",
    "max_sequence_length",
    "gradient_checkpointing",
};

// Fields that change what a step costs in ways pipescope does not price: refused, naming them,
// rather than planned as if they were absent.
struct Unpriced {
  std::string_view field;
  std::string_view what;
};
constexpr Unpriced kUnpricedFields[] = {
    {"kv_lora_rank", "multi-head latent attention (DeepSeek-V2/V3)"},
    {"q_lora_rank", "multi-head latent attention (DeepSeek-V2/V3)"},
    {"qk_rope_head_dim", "multi-head latent attention (DeepSeek-V2/V3)"},
    {"num_nextn_predict_layers", "multi-token prediction layers"},
    {"vision_config", "a vision encoder"},
    {"cross_attention_layers", "cross-attention layers"},
    {"n_routed_experts", "routed experts in a dense model type"},
    {"moe_intermediate_size", "experts in a dense model type"},
};

// Per family: fields read elsewhere or harmless for this family only.
constexpr std::string_view kLlamaExtras[] = {"pretraining_tp"};
constexpr std::string_view kMixtralExtras[] = {"router_aux_loss_coef", "output_router_logits",
                                               "router_jitter_noise"};
// Partial rotary (rotary_pct) and the parallel residual of GPT-NeoX change neither parameters
// nor matmul FLOPs; the parallel residual saves one h-sized tensor we do not model.
constexpr std::string_view kNeoxExtras[] = {"rotary_pct", "rotary_emb_base", "use_parallel_residual",
                                            "classifier_dropout"};

void read_common_sizes(JsonFields& f, ModelDesc& m) {
  m.hidden_size = f.positive_integer("hidden_size");
  m.num_layers = f.positive_integer("num_hidden_layers");
  m.num_attention_heads = f.positive_integer("num_attention_heads");
  m.ffn_hidden_size = f.positive_integer("intermediate_size");
  m.vocab_size = f.positive_integer("vocab_size");
  m.max_position_embeddings = f.integer_or("max_position_embeddings", 0);
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);  // transformers' default for all six
  m.attention_dropout = f.number_or("attention_dropout", 0.0);
  m.position = PositionKind::kRope;
}

// Which layers attend within a window, and how wide (ModelDesc::attention_window): transformers'
// `layer_types` when the file has it, else the family's own switches.
void read_attention_windows(JsonFields& f, ModelDesc& m, std::string_view family) {
  if (m.num_layers <= 0 || m.num_layers > kMostLayers) return;  // validate() names the field
  const int64_t window = f.integer_or("sliding_window", 0);
  std::vector<bool> sliding(static_cast<size_t>(m.num_layers), false);
  if (const nlohmann::json* types = f.optional_array("layer_types")) {
    if (static_cast<int64_t>(types->size()) != m.num_layers) {
      f.fail("layer_types", "has " + std::to_string(types->size()) + " entries for " +
                                std::to_string(m.num_layers) + " layers");
      return;
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const nlohmann::json& t = (*types)[i];
      if (t == "sliding_attention") {
        sliding[i] = true;
      } else if (t != "full_attention") {
        f.fail("layer_types", "entry " + std::to_string(i) + " is " + describe_json_value(t) +
                                  "; pipescope knows 'full_attention' and 'sliding_attention'");
        return;
      }
    }
  } else if (family == "qwen2") {
    // Qwen2Attention: layers from max_window_layers on use the window, when use_sliding_window.
    const bool on = f.boolean_or("use_sliding_window", false);
    const int64_t from = f.integer_or("max_window_layers", m.num_layers);
    for (int64_t i = std::max<int64_t>(from, 0); on && i < m.num_layers; ++i)
      sliding[static_cast<size_t>(i)] = true;
  } else if (family == "mistral" || family == "mixtral") {
    std::fill(sliding.begin(), sliding.end(), window > 0);  // null or absent: full attention
  }
  if (std::none_of(sliding.begin(), sliding.end(), [](bool s) { return s; })) return;
  if (window <= 0) {
    f.fail("sliding_window", "must be a positive number of tokens when layers use sliding attention");
    return;
  }
  m.attention_window.assign(sliding.size(), 0);
  for (size_t i = 0; i < sliding.size(); ++i)
    if (sliding[i]) m.attention_window[i] = window;
  const auto count = std::count(sliding.begin(), sliding.end(), true);
  m.notes.push_back("sliding-window attention priced: " + std::to_string(count) + " of " +
                    std::to_string(m.num_layers) + " layers attend within " + std::to_string(window) +
                    " tokens");
}

// LLaMA and the families that copied its layer: RMSNorm, SwiGLU (hidden_act silu), GQA.
void read_llama_like(JsonFields& f, ModelDesc& m) {
  read_common_sizes(f, m);
  m.num_kv_heads = f.integer_or("num_key_value_heads", m.num_attention_heads);
  m.head_dim = head_dim_or_derived(f, m.hidden_size, m.num_attention_heads);
  if (f.ok() && m.num_kv_heads > 0 && m.num_attention_heads % m.num_kv_heads != 0) {
    f.fail("num_key_value_heads", "(" + std::to_string(m.num_kv_heads) +
                                      ") does not divide num_attention_heads (" +
                                      std::to_string(m.num_attention_heads) + ")");
  }
  m.norm = NormKind::kRmsNorm;
  m.mlp = MlpKind::kSwiglu;
  const std::string act = f.optional_string("hidden_act").value_or("silu");
  if (f.ok() && act != "silu" && act != "swish") {
    f.fail("hidden_act", "is '" + act + "'; this family's gated MLP is modelled as SwiGLU ('silu')");
  }
}

void read_llama(JsonFields& f, ModelDesc& m) {
  read_llama_like(f, m);
  m.qkv_bias = m.attention_output_bias = f.boolean_or("attention_bias", false);
  m.mlp_bias = f.boolean_or("mlp_bias", false);
}

void read_mixtral(JsonFields& f, ModelDesc& m) {
  read_llama_like(f, m);
  // Every layer is a MoE layer; intermediate_size is each expert's FFN size.
  m.moe.num_experts = f.integer("num_local_experts");
  m.moe.top_k = f.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  m.moe.layer_frequency = 1;
}

void read_qwen2(JsonFields& f, ModelDesc& m) {
  read_llama_like(f, m);
  m.qkv_bias = true;  // Qwen2Attention: q/k/v projections with bias, o_proj without
}

void read_internlm2(JsonFields& f, ModelDesc& m) {
  read_llama_like(f, m);
  // InternLM2Config's `bias` (default true) switches the wqkv and wo biases; w1/w2/w3 have none.
  m.qkv_bias = m.attention_output_bias = f.boolean_or("bias", true);
}

void read_gpt_neox(JsonFields& f, ModelDesc& m) {
  read_common_sizes(f, m);
  m.num_kv_heads = m.num_attention_heads;
  // GPTNeoXConfig has no head_dim: transformers requires hidden_size % num_attention_heads == 0.
  if (f.ok() && m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads != 0) {
    f.fail("hidden_size", "(" + std::to_string(m.hidden_size) +
                              ") is not a multiple of num_attention_heads (" +
                              std::to_string(m.num_attention_heads) + ")");
  }
  m.head_dim = m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0;
  m.norm = NormKind::kLayerNorm;
  m.mlp = MlpKind::kGelu;
  m.hidden_dropout = f.number_or("hidden_dropout", 0.0);
  m.qkv_bias = m.attention_output_bias = f.boolean_or("attention_bias", true);
  m.mlp_bias = true;  // dense_h_to_4h and dense_4h_to_h always have biases
  const std::string act = f.optional_string("hidden_act").value_or("gelu");
  if (f.ok() && act.rfind("gelu", 0) != 0) {
    f.fail("hidden_act", "is '" + act + "'; GPT-NeoX's MLP is modelled with GELU ('gelu', 'gelu_new', ...)");
  }
}

struct Family {
  std::string_view model_type;
  std::string_view architecture;  // transformers' class in `architectures`
  void (*read)(JsonFields&, ModelDesc&);
  std::span<const std::string_view> extras;
};

const std::array<Family, 6> kFamilies = {{
    {"llama", "LlamaForCausalLM", read_llama, kLlamaExtras},
    {"mistral", "MistralForCausalLM", read_llama_like, {}},
    {"mixtral", "MixtralForCausalLM", read_mixtral, kMixtralExtras},
    {"qwen2", "Qwen2ForCausalLM", read_qwen2, {}},
    {"internlm2", "InternLM2ForCausalLM", read_internlm2, {}},
    {"gpt_neox", "GPTNeoXForCausalLM", read_gpt_neox, kNeoxExtras},
}};

const std::array<std::string_view, 6> kModelTypes = {"llama", "mistral",   "mixtral",
                                                     "qwen2", "internlm2", "gpt_neox"};

std::string supported_list() {
  std::string list;
  for (std::string_view type : kModelTypes) list += (list.empty() ? "" : ", ") + std::string(type);
  return list;
}

// The family named by model_type, or by the first architectures entry when model_type is absent.
Expected<const Family*> find_family(const nlohmann::json& config, std::string_view origin) {
  const std::string where(origin);
  auto type = config.find("model_type");
  if (type != config.end() && !type->is_null()) {
    if (!type->is_string()) {
      return Error{where + ": field 'model_type' must be a string, got " + describe_json_value(*type)};
    }
    for (const Family& family : kFamilies) {
      if (family.model_type == type->get<std::string>()) return &family;
    }
    return Error{where + ": model_type '" + type->get<std::string>() +
                 "' is not supported (supported: " + supported_list() + ")"};
  }
  auto architectures = config.find("architectures");
  if (architectures != config.end() && architectures->is_array() && !architectures->empty() &&
      (*architectures)[0].is_string()) {
    const std::string name = (*architectures)[0].get<std::string>();
    for (const Family& family : kFamilies) {
      if (family.architecture == name) return &family;
    }
    return Error{where + ": architecture '" + name + "' is not supported and field 'model_type' is missing " +
                 "(supported model types: " + supported_list() + ")"};
  }
  return Error{where + ": field 'model_type' is missing; is this a Hugging Face config.json?"};
}

}  // namespace

std::span<const std::string_view> supported_hf_model_types() { return kModelTypes; }

namespace detail {

Expected<ModelDesc> model_from_hf_json(const nlohmann::json& config, std::string_view name,
                                       std::string_view origin) {
  Expected<const Family*> family = find_family(config, origin);
  if (!family) return family.error();
  JsonFields fields(config,
                    std::string(origin) + " (model_type '" + std::string((*family)->model_type) + "')");
  ModelDesc m;
  m.name = std::string(name);
  m.architecture = std::string((*family)->model_type);
  m.source = "Hugging Face config.json: " + std::string(origin);
  (*family)->read(fields, m);
  read_attention_windows(fields, m, (*family)->model_type);
  fields.ignore(kHarmlessFields);
  fields.ignore((*family)->extras);
  for (const Unpriced& u : kUnpricedFields) {
    if (config.contains(u.field) && !config[std::string(u.field)].is_null()) {
      fields.fail(u.field, "describes " + std::string(u.what) +
                               ", which changes the model's cost and pipescope does not price; plan a model "
                               "description without it (docs/planner.md, \"What it does not model\")");
    }
  }
  std::vector<std::string> runtime;
  for (std::string_view key : kRuntimeFields)
    if (config.contains(key)) runtime.emplace_back(key);
  fields.ignore(kRuntimeFields);
  const std::vector<std::string> unknown = fields.unknown_fields();
  if (Status s = fields.status(); !s) return s.error();
  auto joined = [](const std::vector<std::string>& keys) {
    std::string text;
    for (const std::string& k : keys) text += (text.empty() ? "" : ", ") + k;
    return text;
  };
  if (!runtime.empty()) {
    m.notes.push_back(
        "config.json settings of the training or inference code, which change no parameter, "
        "FLOP or stored activation, were left out: " +
        joined(runtime));
  }
  if (!unknown.empty()) {
    m.notes.push_back("config.json fields pipescope does not know were taken as changing nothing: " +
                      joined(unknown) + " (check that none adds parameters, FLOPs or stored activations)");
  }
  if (Status s = validate(m); !s) return Error{std::string(origin) + ": " + s.error().message};
  return m;
}

}  // namespace detail

Expected<ModelDesc> parse_hf_config(std::string_view json_text, std::string_view name,
                                    std::string_view origin) {
  Expected<nlohmann::json> config = parse_json_object(json_text, origin);
  if (!config) return config.error();
  return detail::model_from_hf_json(*config, name, origin);
}

}  // namespace pipescope::models
