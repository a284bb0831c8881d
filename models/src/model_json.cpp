#include "pipescope/models/model_json.h"

#include <string>

#include <nlohmann/json.hpp>

#include "json_fields.h"
#include "model_parsers.h"

namespace pipescope::models {
namespace detail {
namespace {

MoeDesc read_moe(const nlohmann::json& object, std::string_view origin, JsonFields& outer) {
  JsonFields fields(object, std::string(origin), "moe.");
  MoeDesc moe;
  moe.num_experts = fields.integer("num_experts");
  moe.top_k = fields.integer("top_k");
  moe.expert_ffn_hidden_size = fields.integer("expert_ffn_hidden_size");
  moe.num_shared_experts = fields.integer_or("num_shared_experts", 0);
  moe.shared_expert_ffn_hidden_size = fields.integer_or("shared_expert_ffn_hidden_size", 0);
  moe.layer_frequency = fields.integer_or("layer_frequency", 1);
  fields.reject_unknown_fields();
  outer.take_error(fields.status());
  return moe;
}

}  // namespace

Expected<ModelDesc> model_from_pipescope_json(const nlohmann::json& document, std::string_view origin) {
  JsonFields fields(document, std::string(origin));
  const int64_t version = fields.integer("schema_version");
  if (fields.ok() && version != kModelSchemaVersion) {
    fields.fail("schema_version", "is " + std::to_string(version) + ", this pipescope reads version " +
                                      std::to_string(kModelSchemaVersion));
  }
  ModelDesc m;
  m.name = fields.string("name");
  m.architecture = fields.optional_string("architecture").value_or("");
  m.source = fields.optional_string("source").value_or("");
  m.vocab_size = fields.integer("vocab_size");
  m.hidden_size = fields.integer("hidden_size");
  m.num_layers = fields.integer("num_layers");
  m.num_attention_heads = fields.integer("num_attention_heads");
  m.num_kv_heads = fields.integer_or("num_kv_heads", m.num_attention_heads);
  m.head_dim = head_dim_or_derived(fields, m.hidden_size, m.num_attention_heads);
  m.ffn_hidden_size = fields.integer("ffn_hidden_size");
  const std::string mlp = fields.string("mlp");
  const std::string norm = fields.string("norm");
  const std::string position = fields.string("position_embedding");
  if (fields.ok()) {
    if (auto kind = parse_mlp_kind(mlp)) {
      m.mlp = *kind;
    } else {
      fields.fail("mlp", "is '" + mlp + "', expected 'gelu' or 'swiglu'");
    }
    if (auto kind = parse_norm_kind(norm)) {
      m.norm = *kind;
    } else {
      fields.fail("norm", "is '" + norm + "', expected 'layernorm' or 'rmsnorm'");
    }
    if (auto kind = parse_position_kind(position)) {
      m.position = *kind;
    } else {
      fields.fail("position_embedding", "is '" + position + "', expected 'rope', 'learned' or 'alibi'");
    }
  }
  m.max_position_embeddings = fields.integer_or("max_position_embeddings", 0);
  m.tied_embeddings = fields.boolean("tied_embeddings");
  m.qkv_bias = fields.boolean_or("qkv_bias", false);
  m.attention_output_bias = fields.boolean_or("attention_output_bias", false);
  m.mlp_bias = fields.boolean_or("mlp_bias", false);
  m.attention_dropout = fields.number_or("attention_dropout", 0.0);
  m.hidden_dropout = fields.number_or("hidden_dropout", 0.0);
  if (const nlohmann::json* moe = fields.optional_object("moe")) m.moe = read_moe(*moe, origin, fields);
  // Numbers the description had to assume (no public source), each with its reason: a plan says them.
  if (const nlohmann::json* assumptions = fields.optional_array("assumptions")) {
    for (const nlohmann::json& assumption : *assumptions) {
      if (!assumption.is_string()) {
        fields.fail("assumptions", "must be a list of strings, got " + describe_json_value(assumption));
        break;
      }
      m.notes.push_back(assumption.get<std::string>());
    }
  }
  fields.reject_unknown_fields();
  if (Status s = fields.status(); !s) return s.error();
  if (Status s = validate(m); !s) return Error{std::string(origin) + ": " + s.error().message};
  return m;
}

}  // namespace detail

Expected<ModelDesc> parse_model_json(std::string_view text, std::string_view origin) {
  Expected<nlohmann::json> document = parse_json_object(text, origin);
  if (!document) return document.error();
  return detail::model_from_pipescope_json(*document, origin);
}

std::string to_model_json(const ModelDesc& m) {
  nlohmann::ordered_json j;
  j["schema_version"] = kModelSchemaVersion;
  j["name"] = m.name;
  j["architecture"] = m.architecture;
  j["source"] = m.source;
  j["vocab_size"] = m.vocab_size;
  j["hidden_size"] = m.hidden_size;
  j["num_layers"] = m.num_layers;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_kv_heads"] = m.num_kv_heads;
  j["head_dim"] = m.head_dim;
  j["ffn_hidden_size"] = m.ffn_hidden_size;
  j["mlp"] = to_string(m.mlp);
  j["norm"] = to_string(m.norm);
  j["position_embedding"] = to_string(m.position);
  j["max_position_embeddings"] = m.max_position_embeddings;
  j["tied_embeddings"] = m.tied_embeddings;
  j["qkv_bias"] = m.qkv_bias;
  j["attention_output_bias"] = m.attention_output_bias;
  j["mlp_bias"] = m.mlp_bias;
  j["attention_dropout"] = m.attention_dropout;
  j["hidden_dropout"] = m.hidden_dropout;
  if (m.is_moe()) {
    j["moe"] = {{"num_experts", m.moe.num_experts},
                {"top_k", m.moe.top_k},
                {"expert_ffn_hidden_size", m.moe.expert_ffn_hidden_size},
                {"num_shared_experts", m.moe.num_shared_experts},
                {"shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size},
                {"layer_frequency", m.moe.layer_frequency}};
  }
  if (!m.notes.empty()) j["assumptions"] = m.notes;
  return j.dump(2) + "\n";
}

}  // namespace pipescope::models
