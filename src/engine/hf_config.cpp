// config.json of each family the engine runs, read into the one model description (LlamaConfig).
// What a family's transformers implementation does with a field is what the engine does; a field
// that would change the math in a way the engine cannot follow is refused, naming it.
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "engine/config_fields.hpp"
#include "engine/hf_layer_widths.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

namespace {

using nlohmann::json;

struct Family {
  std::string_view model_type, architecture;
};
constexpr std::array<Family, 10> kFamilies{{{"llama", "LlamaForCausalLM"},
                                           {"mistral", "MistralForCausalLM"},
                                           {"mixtral", "MixtralForCausalLM"},
                                           {"qwen2", "Qwen2ForCausalLM"},
                                           {"qwen2_moe", "Qwen2MoeForCausalLM"},
                                           {"gemma", "GemmaForCausalLM"},
                                           {"gemma2", "Gemma2ForCausalLM"},
                                           {"phi3", "Phi3ForCausalLM"},
                                           {"nemotron-nas", "DeciLMForCausalLM"},
                                           {"deci", "DeciLMForCausalLM"}}};

std::string family_list(bool architectures) {
  std::string out;
  for (const Family& f : kFamilies) out += fmt::format("{}{}", out.empty() ? "" : ", ", architectures ? f.architecture : f.model_type);
  return out;
}

// The model_type (from the architecture when only that is given; "llama" when neither is).
std::string family_of(const JsonFields& f) {
  std::string type = f.string("model_type");
  bool known = type.empty();
  for (const Family& fam : kFamilies) known = known || fam.model_type == type;
  if (!known) throw config_invalid(f.file(), "model_type", fmt::format("'{}' is not a family the engine runs ({})", type, family_list(false)));
  if (!f.has("architectures")) return type.empty() ? "llama" : type;
  if (!f.at("architectures").is_array()) throw config_invalid(f.file(), "architectures", "is not a list");
  for (const json& a : f.at("architectures")) {
    const Family* match = nullptr;
    for (const Family& fam : kFamilies)
      if (a.is_string() && fam.architecture == a.get<std::string>()) match = &fam;
    if (!match) throw config_invalid(f.file(), "architectures", fmt::format("{} is not one the engine runs ({})", a.dump(), family_list(true)));
    if (type.empty()) type = match->model_type;
  }
  return type.empty() ? "llama" : type;
}

std::string activation(const JsonFields& f, const std::string& type) {
  // Gemma's MLP reads hidden_activation and, without it, runs the tanh approximation whatever
  // hidden_act says (how the models were trained; transformers and vLLM both do so).
  const bool gemma = type == "gemma" || type == "gemma2";
  const char* key = gemma ? "hidden_activation" : "hidden_act";
  std::string act = f.string(key, gemma ? "gelu_pytorch_tanh" : "silu");
  if (act == "gelu_new") act = "gelu_pytorch_tanh";  // the same tanh approximation
  if (act != "silu" && act != "gelu" && act != "gelu_pytorch_tanh")
    throw config_invalid(f.file(), key, fmt::format("'{}' is not supported (silu, gelu, gelu_pytorch_tanh, gelu_new)", act));
  return act;
}

// Factors as JSON numbers, one per rotary frequency (their count is checked with the head's size).
std::vector<float> factor_list(const JsonFields& f, const char* key) {
  if (!f.has(key) || !f.at(key).is_array() || f.at(key).empty())
    throw config_invalid(f.file(), fmt::format("rope_scaling.{}", key), "must be a non-empty list of numbers");
  const nlohmann::json& v = f.at(key);
  std::vector<float> out;
  for (const nlohmann::json& x : v) {
    if (!x.is_number() || !(x.get<double>() > 0))
      throw config_invalid(f.file(), fmt::format("rope_scaling.{}", key), fmt::format("{} is not a positive number", x.dump()));
    out.push_back(x.get<float>());
  }
  return out;
}

// YaRN's default attention factor, as transformers computes it (with DeepSeek's mscale pair when given).
double yarn_attention_factor(const JsonFields& f, double factor) {
  auto mscale = [&](double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  const double m = f.number("mscale", 0), all = f.number("mscale_all_dim", 0);
  return m && all ? mscale(m) / mscale(all) : mscale(1);
}

RopeScaling rope_scaling(const JsonFields& top) {
  RopeScaling r;
  if (!top.has("rope_scaling")) return r;
  if (!top.at("rope_scaling").is_object()) throw config_invalid(top.file(), "rope_scaling", "is not an object");
  const JsonFields f(top.at("rope_scaling"), top.file());
  const std::string type = f.string("rope_type", f.string("type"));
  if (type.empty() || type == "default") return r;
  static const std::map<std::string, std::set<std::string>> known{
      {"linear", {"factor"}},
      {"llama3", {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}},
      {"yarn", {"factor", "attention_factor", "beta_fast", "beta_slow", "original_max_position_embeddings", "mscale",
                "mscale_all_dim", "truncate"}},
      {"longrope", {"short_factor", "long_factor", "factor", "attention_factor", "original_max_position_embeddings"}},
      {"dynamic", {"factor", "original_max_position_embeddings"}}};
  const auto keys = known.find(type);
  if (keys == known.end())
    throw config_invalid(top.file(), "rope_scaling", fmt::format("type '{}' is not supported (linear, llama3, yarn, longrope, dynamic)", type));
  // A key that changes the frequencies and is not read would silently change the model.
  for (const auto& [key, value] : top.at("rope_scaling").items())
    if (key != "type" && key != "rope_type" && !keys->second.count(key))
      throw config_invalid(top.file(), fmt::format("rope_scaling.{}", key), fmt::format("is not a {} setting", type));
  r.type = type;
  const uint64_t max_positions = top.uint("max_position_embeddings", 2048);
  if (type == "longrope") {
    r.short_factor = factor_list(f, "short_factor");
    r.long_factor = factor_list(f, "long_factor");
    // Phi-3 keeps the pretrained context at the top level; the factor is then the ratio of the two.
    r.original_max_position_embeddings = top.uint("original_max_position_embeddings", max_positions);
    r.factor = top.has("original_max_position_embeddings") ? double(max_positions) / double(r.original_max_position_embeddings)
                                                           : f.number("factor", 1.0);
    if (r.original_max_position_embeddings == 0 || !(r.factor > 0))
      throw config_invalid(top.file(), "original_max_position_embeddings", "longrope needs a positive pretrained context and factor");
    r.attention_factor = f.has("attention_factor") ? f.number("attention_factor", 1.0)
                         : r.factor <= 1 ? 1.0
                                         : std::sqrt(1 + std::log(r.factor) / std::log(double(r.original_max_position_embeddings)));
    return r;
  }
  r.factor = f.number("factor", 0);
  if (!(r.factor >= 1) || !std::isfinite(r.factor)) throw config_invalid(top.file(), "rope_scaling.factor", "must be a number of at least 1");
  if (type == "llama3") {
    r.low_freq_factor = f.number("low_freq_factor", 1.0);
    r.high_freq_factor = f.number("high_freq_factor", 4.0);
    r.original_max_position_embeddings = f.uint("original_max_position_embeddings", 8192);
    if (!(r.high_freq_factor > r.low_freq_factor) || !(r.low_freq_factor > 0) || r.original_max_position_embeddings == 0)
      throw config_invalid(top.file(), "rope_scaling", "llama3 needs 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0");
  } else if (type == "yarn") {
    r.original_max_position_embeddings = f.uint("original_max_position_embeddings", max_positions);
    r.beta_fast = f.number("beta_fast", 32);
    r.beta_slow = f.number("beta_slow", 1);
    r.truncate = f.boolean("truncate", true);
    r.attention_factor = f.has("attention_factor") ? f.number("attention_factor", 1.0) : yarn_attention_factor(f, r.factor);
    if (r.original_max_position_embeddings == 0 || !(r.beta_fast > 0) || !(r.beta_slow > 0) || !(r.attention_factor > 0))
      throw config_invalid(top.file(), "rope_scaling", "yarn needs positive original_max_position_embeddings, beta_fast, beta_slow and attention_factor");
  }
  return r;
}

// Which layers slide, and by how much, as each family's transformers code decides it.
void read_windows(const JsonFields& f, const std::string& type, LlamaConfig& c) {
  if (type == "llama" || type == "gemma" || decilm_family(type)) {
    if (f.has("sliding_window")) throw config_invalid(f.file(), "sliding_window", fmt::format("{} models have no sliding window", type));
    return;
  }
  if (type == "qwen2" || type == "qwen2_moe") {
    if (!f.boolean("use_sliding_window", false)) return;
    c.sliding_window_from = f.uint("max_window_layers", 28);
  }
  c.sliding_window = f.uint("sliding_window", type == "gemma2" ? 4096 : 0);
  if (type == "gemma2") c.sliding_window_every = 2;  // layers 0, 2, 4, ...
}

void read_gemma(const JsonFields& f, const std::string& type, LlamaConfig& c) {
  const bool gemma2 = type == "gemma2";
  c.norm_weight_offset = c.scale_embeddings = type == "gemma" || gemma2;
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"})
    if (!gemma2 && f.has(key)) throw config_invalid(f.file(), key, fmt::format("is a Gemma 2 field; {} models do not apply it", type));
  if (!gemma2) return;
  c.sandwich_norms = true;
  c.attn_logit_softcapping = f.number("attn_logit_softcapping", 0);
  c.final_logit_softcapping = f.number("final_logit_softcapping", 0);
  c.query_pre_attn_scalar = f.number("query_pre_attn_scalar", 256);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"}) {
    const double v = f.number(key, 0);
    if (v < 0 || !std::isfinite(v)) throw config_invalid(f.file(), key, "must be a positive number");
  }
  if (c.query_pre_attn_scalar == 0) throw config_invalid(f.file(), "query_pre_attn_scalar", "must be a positive number");
}

// Mixtral's experts are intermediate_size wide: the caller sets that.
MoeConfig read_moe(const JsonFields& f, const std::string& type) {
  MoeConfig m;
  if (type == "mixtral") {
    m.num_experts = f.uint("num_local_experts", 8);
    m.experts_per_token = f.uint("num_experts_per_tok", 2);
  } else if (type == "qwen2_moe") {
    m.num_experts = f.uint("num_experts", 60);
    m.experts_per_token = f.uint("num_experts_per_tok", 4);
    m.expert_intermediate_size = f.uint("moe_intermediate_size", 1408);
    m.norm_topk_prob = f.boolean("norm_topk_prob", false);
    m.shared_expert_intermediate_size = f.uint("shared_expert_intermediate_size", 5632);
    m.decoder_sparse_step = f.uint("decoder_sparse_step", 1);
    if (f.has("mlp_only_layers")) {
      if (!f.at("mlp_only_layers").is_array()) throw config_invalid(f.file(), "mlp_only_layers", "is not a list");
      for (const json& l : f.at("mlp_only_layers")) {
        if (!l.is_number_unsigned()) throw config_invalid(f.file(), "mlp_only_layers", fmt::format("{} is not a layer number", l.dump()));
        m.mlp_only_layers.push_back(l.get<uint64_t>());
      }
    }
  } else {
    for (const char* key : {"num_local_experts", "num_experts"})
      if (f.uint(key, 0) > 1) throw config_invalid(f.file(), key, fmt::format("{} models have no experts", type));
    return m;
  }
  if (m.num_experts == 0) throw config_invalid(f.file(), type == "mixtral" ? "num_local_experts" : "num_experts", "must be positive");
  if (m.experts_per_token == 0 || m.experts_per_token > m.num_experts)
    throw config_invalid(f.file(), "num_experts_per_tok", fmt::format("{} is not in [1, {}]", m.experts_per_token, m.num_experts));
  if (type == "qwen2_moe" && m.expert_intermediate_size == 0) throw config_invalid(f.file(), "moe_intermediate_size", "must be positive");
  if (m.decoder_sparse_step == 0) throw config_invalid(f.file(), "decoder_sparse_step", "must be positive");
  return m;
}

std::vector<int32_t> token_ids(const JsonFields& f, const char* key) {
  std::vector<int32_t> out;
  if (!f.has(key)) return out;
  const json& v = f.at(key);
  for (const json& id : v.is_array() ? v : json::array({v})) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > uint64_t(INT32_MAX))
      throw config_invalid(f.file(), key, fmt::format("{} is not a token id or a list of them", v.dump()));
    out.push_back(int32_t(id.get<uint64_t>()));
  }
  return out;
}

double partial_rotary_factor(const JsonFields& f) {
  const double partial = f.number("partial_rotary_factor", 1.0);
  if (!(partial > 0 && partial <= 1)) throw config_invalid(f.file(), "partial_rotary_factor", "must be in (0, 1]");
  return partial;
}

// attention_bias gives q/k/v/o biases (Qwen2: q/k/v always); DeciLM as vLLM reads it: `bias` too,
// and qkv_bias overriding it for q/k/v.
void read_biases(const JsonFields& f, const std::string& type, LlamaConfig& c) {
  const bool deci = decilm_family(type);
  const bool attention_bias = f.boolean("attention_bias", false) || (deci && f.boolean("bias", false));
  c.qkv_bias = deci ? f.boolean("qkv_bias", attention_bias) : attention_bias || type == "qwen2" || type == "qwen2_moe";
  c.o_bias = attention_bias && type != "qwen2" && type != "qwen2_moe";
  c.mlp_bias = f.boolean("mlp_bias", false);
  if (c.mlp_bias && type != "llama" && !deci) throw config_invalid(f.file(), "mlp_bias", fmt::format("{} models have no MLP biases", type));
}

// DeciLM's rotary layouts other than rotate-half (vLLM turns these two with Meta's interleaved pairs).
void refuse_interleaved_rotary(const JsonFields& f, const std::string& type) {
  const std::string position = decilm_family(type) ? f.string("position_embedding_type") : "";
  if (position == "mistral_yarn" || position == "rope_llama4")
    throw config_invalid(f.file(), "position_embedding_type", fmt::format("'{}' is not supported", position));
}

}  // namespace

LlamaConfig llama_config_from_hf_json(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "config.json is not a JSON object", file);
  const JsonFields f(doc, file);
  const std::string type = family_of(f);
  LlamaConfig c;
  c.origin = "config.json";
  c.architecture = type;
  c.hidden_act = activation(f, type);
  // What the engine may refuse first, then the sizes.
  c.rope_scaling = rope_scaling(f);
  const double partial = partial_rotary_factor(f);
  read_windows(f, type, c);
  read_gemma(f, type, c);
  refuse_interleaved_rotary(f, type);
  c.moe = read_moe(f, type);
  c.eos_token_ids = token_ids(f, "eos_token_id");
  c.hidden_size = f.uint("hidden_size");
  c.num_layers = f.uint("num_hidden_layers");
  c.num_heads = f.uint("num_attention_heads");
  read_layer_widths(f, type, c);
  if (type == "mixtral") c.moe.expert_intermediate_size = c.intermediate_size;
  c.head_dim = f.uint("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.rotary_dim = uint64_t(double(c.head_dim) * partial);  // transformers: int(head_dim * factor); validated with the rest
  c.vocab_size = f.uint("vocab_size", 0);
  c.max_position_embeddings = f.uint("max_position_embeddings", 2048);
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6);
  c.rope_theta = f.number("rope_theta", 10000.0);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", type == "gemma" || type == "gemma2");
  read_biases(f, type, c);
  return c;
}

std::vector<int32_t> eos_ids_from_generation_config(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "generation_config.json is not a JSON object", file);
  return token_ids(JsonFields(doc, file), "eos_token_id");
}

}  // namespace wl
