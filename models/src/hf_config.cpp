#include "pipescope/models/hf_config.h"

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

// Per family: fields read elsewhere or harmless for this family only.
constexpr std::string_view kLlamaExtras[] = {"pretraining_tp"};
constexpr std::string_view kMistralExtras[] = {"sliding_window"};
constexpr std::string_view kMixtralExtras[] = {"sliding_window", "router_aux_loss_coef",
                                               "output_router_logits", "router_jitter_noise"};
constexpr std::string_view kQwen2Extras[] = {"use_sliding_window", "sliding_window", "max_window_layers",
                                             "layer_types"};
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
    {"mistral", "MistralForCausalLM", read_llama_like, kMistralExtras},
    {"mixtral", "MixtralForCausalLM", read_mixtral, kMixtralExtras},
    {"qwen2", "Qwen2ForCausalLM", read_qwen2, kQwen2Extras},
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
      return Error{where + ": field 'model_type' must be a string, got " +
                   detail::describe_json_value(*type)};
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
  fields.ignore(kHarmlessFields);
  fields.ignore((*family)->extras);
  fields.reject_unknown_fields();
  if (Status s = fields.status(); !s) return s.error();
  if (Status s = validate(m); !s) return Error{std::string(origin) + ": " + s.error().message};
  return m;
}

}  // namespace detail

Expected<ModelDesc> parse_hf_config(std::string_view json_text, std::string_view name,
                                    std::string_view origin) {
  Expected<nlohmann::json> config = detail::parse_json_document(json_text, origin);
  if (!config) return config.error();
  return detail::model_from_hf_json(*config, name, origin);
}

}  // namespace pipescope::models
