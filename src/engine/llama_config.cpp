#include "weightloader/engine/llama_config.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"

namespace wl {

namespace {

using nlohmann::json;

// Far above any released model; they bound what a configuration can make the engine allocate
// before the checkpoint's own tensor shapes are checked against it.
constexpr uint64_t kMaxWidth = 1ull << 20;
constexpr uint64_t kMaxLayers = 1ull << 12;
constexpr uint64_t kMaxVocab = 1ull << 24;
constexpr uint64_t kMaxPositions = 1ull << 24;

Error invalid(const std::string& file, const std::string& field, const std::string& why) {
  return Error(ErrorCode::ConfigInvalid, fmt::format("field '{}': {}", field, why), file);
}

// Typed access to config.json fields, with the field named in every error.
class JsonFields {
 public:
  JsonFields(const json& c, std::string file) : c_(c), file_(std::move(file)) {}

  bool has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }
  uint64_t uint(const char* key, std::optional<uint64_t> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      throw invalid(file_, key, "missing");
    }
    if (!c_[key].is_number_unsigned()) throw invalid(file_, key, fmt::format("{} is not a non-negative integer", c_[key].dump()));
    return c_[key].get<uint64_t>();
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!c_[key].is_number()) throw invalid(file_, key, fmt::format("{} is not a number", c_[key].dump()));
    return c_[key].get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!c_[key].is_boolean()) throw invalid(file_, key, fmt::format("{} is not true or false", c_[key].dump()));
    return c_[key].get<bool>();
  }
  std::string string(const char* key) const {
    if (!has(key)) return {};
    if (!c_[key].is_string()) throw invalid(file_, key, fmt::format("{} is not a string", c_[key].dump()));
    return c_[key].get<std::string>();
  }

 private:
  const json& c_;
  std::string file_;
};

// Metadata values (GGUF keys, llama2.c header fields) are strings in the catalogue.
class MetadataFields {
 public:
  explicit MetadataFields(const WeightSource& s) : m_(s.metadata()), file_(s.origin()) {}
  bool has(const std::string& key) const { return m_.count(key) != 0; }
  uint64_t uint(const std::string& key, std::optional<uint64_t> fallback = std::nullopt) const {
    auto it = m_.find(key);
    if (it == m_.end()) {
      if (fallback) return *fallback;
      throw invalid(file_, key, "missing");
    }
    size_t used = 0;
    try {
      const unsigned long long v = std::stoull(it->second, &used);
      if (used == it->second.size() && it->second[0] != '-') return v;
    } catch (const std::exception&) {
    }
    throw invalid(file_, key, fmt::format("'{}' is not a non-negative integer", it->second));
  }
  double number(const std::string& key, double fallback) const {
    auto it = m_.find(key);
    if (it == m_.end()) return fallback;
    size_t used = 0;
    try {
      const double v = std::stod(it->second, &used);
      if (used == it->second.size()) return v;
    } catch (const std::exception&) {
    }
    throw invalid(file_, key, fmt::format("'{}' is not a number", it->second));
  }
  std::string string(const std::string& key) const {
    auto it = m_.find(key);
    return it == m_.end() ? std::string() : it->second;
  }

 private:
  const std::map<std::string, std::string>& m_;
  std::string file_;
};

LlamaConfig from_gguf(const WeightSource& s) {
  const MetadataFields m(s);
  const std::string arch = m.string("general.architecture");
  if (arch != "llama")
    throw invalid(s.origin(), "general.architecture", fmt::format("'{}' is not a Llama-family architecture (llama)", arch));
  LlamaConfig c;
  c.origin = "gguf";
  c.hidden_size = m.uint("llama.embedding_length");
  c.intermediate_size = m.uint("llama.feed_forward_length");
  c.num_layers = m.uint("llama.block_count");
  c.num_heads = m.uint("llama.attention.head_count");
  c.num_kv_heads = m.uint("llama.attention.head_count_kv", c.num_heads);
  c.head_dim = m.uint("llama.attention.key_length", c.num_heads ? c.hidden_size / c.num_heads : 0);
  if (m.has("llama.rope.dimension_count") && m.uint("llama.rope.dimension_count") != c.head_dim)
    throw invalid(s.origin(), "llama.rope.dimension_count", "partial rotary embeddings are not supported");
  c.vocab_size = m.uint("llama.vocab_size", 0);
  c.max_position_embeddings = m.uint("llama.context_length", 2048);
  c.rms_norm_eps = m.number("llama.attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = m.number("llama.rope.freq_base", 10000.0);
  if (m.has("llama.rope.scaling.type") && m.string("llama.rope.scaling.type") != "none")
    throw invalid(s.origin(), "llama.rope.scaling.type", "rope scaling is not supported");
  return c;
}

LlamaConfig from_llama2c(const WeightSource& s) {
  const MetadataFields m(s);
  LlamaConfig c;
  c.origin = "llama2c";
  c.hidden_size = m.uint("dim");
  c.intermediate_size = m.uint("hidden_dim");
  c.num_layers = m.uint("n_layers");
  c.num_heads = m.uint("n_heads");
  c.num_kv_heads = m.uint("n_kv_heads", c.num_heads);
  c.head_dim = c.num_heads ? c.hidden_size / c.num_heads : 0;
  c.vocab_size = m.uint("vocab_size");
  c.max_position_embeddings = m.uint("seq_len");
  c.tie_word_embeddings = m.string("tie_word_embeddings") == "true";
  return c;  // llama2.c's run.c fixes eps at 1e-5 and theta at 10000: the defaults
}

// Checks a field against the checkpoint's tensors before anything is allocated from it.
void check_shape(const WeightSource& s, const std::string& name, const Shape& want, const std::string& fields) {
  const TensorInfo* t = s.find(name);
  if (!t) return;  // the load reports a missing tensor with the full list
  if (t->shape != want)
    throw Error(ErrorCode::ConfigInvalid,
                fmt::format("the configuration ({}) implies {} but the checkpoint's tensor is {}", fields, shape_to_string(want),
                            shape_to_string(t->shape)),
                s.origin(), name);
}

void validate(const LlamaConfig& c, const std::string& file) {
  auto positive = [&](uint64_t v, const char* field, uint64_t max) {
    if (v == 0) throw invalid(file, field, "must be positive");
    if (v > max) throw invalid(file, field, fmt::format("{} is above the supported maximum {}", v, max));
  };
  positive(c.hidden_size, "hidden_size", kMaxWidth);
  positive(c.intermediate_size, "intermediate_size", kMaxWidth);
  positive(c.num_layers, "num_hidden_layers", kMaxLayers);
  positive(c.num_heads, "num_attention_heads", kMaxWidth);
  positive(c.num_kv_heads, "num_key_value_heads", kMaxWidth);
  positive(c.head_dim, "head_dim", kMaxWidth);
  positive(c.vocab_size, "vocab_size", kMaxVocab);
  positive(c.max_position_embeddings, "max_position_embeddings", kMaxPositions);
  if (c.num_heads % c.num_kv_heads != 0)
    throw invalid(file, "num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}", c.num_kv_heads, c.num_heads));
  if (c.head_dim % 2 != 0) throw invalid(file, "head_dim", fmt::format("{} is odd: rotary embeddings need pairs", c.head_dim));
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps)) throw invalid(file, "rms_norm_eps", "must be a positive number");
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) throw invalid(file, "rope_theta", "must be a positive number");
}

// Meta's params.json (dim, n_layers, n_heads, ...); the FFN width from the tensors, and the
// vocabulary from them when params.json says -1.
LlamaConfig from_meta_params(const WeightSource& s) {
  const std::string file = s.origin() + "/params.json";
  json doc = json::parse(s.metadata().at("params.json"), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "params.json is not a JSON object", file);
  if (doc.contains("vocab_size") && doc["vocab_size"].is_number_integer() && doc["vocab_size"].get<int64_t>() < 0)
    doc.erase("vocab_size");  // -1: as the tokenizer says, i.e. the embedding's rows
  const JsonFields f(doc, file);
  if (f.boolean("use_scaled_rope", false)) throw invalid(file, "use_scaled_rope", "rope scaling is not supported");
  LlamaConfig c;
  c.origin = "params.json";
  c.hidden_size = f.uint("dim");
  c.num_layers = f.uint("n_layers");
  c.num_heads = f.uint("n_heads");
  c.num_kv_heads = f.uint("n_kv_heads", c.num_heads);
  c.head_dim = c.num_heads ? c.hidden_size / c.num_heads : 0;
  c.vocab_size = f.uint("vocab_size", 0);
  c.max_position_embeddings = f.uint("max_seq_len", 4096);
  c.rms_norm_eps = f.number("norm_eps", 1e-5);
  c.rope_theta = f.number("rope_theta", 10000.0);
  const TensorInfo* gate = s.find("model.layers.0.mlp.gate_proj.weight");
  if (!gate || gate->shape.size() != 2)
    throw invalid(file, "hidden_dim", "the FFN width comes from layers.0.feed_forward.w1.weight, which is missing or not a matrix");
  c.intermediate_size = gate->shape[0];
  return c;
}

}  // namespace

LlamaConfig llama_config_from_hf_json(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "config.json is not a JSON object", file);
  const JsonFields f(doc, file);

  static const std::set<std::string> model_types = {"llama", "mistral", "qwen2"};
  static const std::set<std::string> architectures = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};
  const std::string model_type = f.string("model_type");
  if (!model_type.empty() && !model_types.count(model_type))
    throw invalid(file, "model_type", fmt::format("'{}' is not a Llama-family model (llama, mistral, qwen2)", model_type));
  if (f.has("architectures")) {
    if (!doc["architectures"].is_array()) throw invalid(file, "architectures", "is not a list");
    for (const json& a : doc["architectures"])
      if (!a.is_string() || !architectures.count(a.get<std::string>()))
        throw invalid(file, "architectures",
                      fmt::format("{} is not one the engine runs (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)", a.dump()));
  }
  if (const std::string act = f.string("hidden_act"); !act.empty() && act != "silu")
    throw invalid(file, "hidden_act", fmt::format("'{}' is not supported (silu)", act));
  if (f.has("rope_scaling")) throw invalid(file, "rope_scaling", "rope scaling is not supported");

  LlamaConfig c;
  c.origin = "config.json";
  c.hidden_size = f.uint("hidden_size");
  c.intermediate_size = f.uint("intermediate_size");
  c.num_layers = f.uint("num_hidden_layers");
  c.num_heads = f.uint("num_attention_heads");
  c.num_kv_heads = f.uint("num_key_value_heads", c.num_heads);
  c.head_dim = f.uint("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.vocab_size = f.uint("vocab_size", 0);
  c.max_position_embeddings = f.uint("max_position_embeddings", 2048);
  // Mistral's sliding window is not implemented: positions beyond it are refused instead.
  if (f.has("sliding_window") && f.boolean("use_sliding_window", true))
    c.max_position_embeddings = std::min(c.max_position_embeddings, f.uint("sliding_window"));
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6);
  c.rope_theta = f.number("rope_theta", 10000.0);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  const bool attention_bias = f.boolean("attention_bias", false);
  c.qkv_bias = attention_bias || model_type == "qwen2";
  c.o_bias = attention_bias;
  c.mlp_bias = f.boolean("mlp_bias", false);
  return c;
}

LlamaConfig llama_config_from_source(const WeightSource& s) {
  LlamaConfig c;
  if (auto it = s.metadata().find("config.json"); it != s.metadata().end()) {
    c = llama_config_from_hf_json(it->second, s.origin() + "/config.json");
  } else if (s.metadata().count("params.json")) {
    c = from_meta_params(s);
  } else if (s.metadata().count("general.architecture")) {
    c = from_gguf(s);
  } else if (s.format() == "llama2c") {
    c = from_llama2c(s);
  } else {
    throw Error(ErrorCode::ConfigMissing,
                "no model configuration: expected a config.json beside the weights, GGUF llama.* metadata or a llama2.c header",
                s.origin());
  }
  const TensorInfo* embed = s.find("model.embed_tokens.weight");
  if (c.vocab_size == 0 && embed && embed->shape.size() == 2) c.vocab_size = embed->shape[0];
  if (!s.find("lm_head.weight")) c.tie_word_embeddings = true;
  validate(c, s.origin());

  const std::string dims = fmt::format("hidden_size {}, heads {} x head_dim {}, kv heads {}, intermediate_size {}, vocab_size {}",
                                       c.hidden_size, c.num_heads, c.head_dim, c.num_kv_heads, c.intermediate_size, c.vocab_size);
  check_shape(s, "model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, dims);
  check_shape(s, "lm_head.weight", {c.vocab_size, c.hidden_size}, dims);
  check_shape(s, "model.layers.0.self_attn.q_proj.weight", {c.q_dim(), c.hidden_size}, dims);
  check_shape(s, "model.layers.0.self_attn.k_proj.weight", {c.kv_dim(), c.hidden_size}, dims);
  check_shape(s, "model.layers.0.self_attn.o_proj.weight", {c.hidden_size, c.q_dim()}, dims);
  check_shape(s, "model.layers.0.mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size}, dims);
  if (s.find(fmt::format("model.layers.{}.input_layernorm.weight", c.num_layers)))
    throw invalid(s.origin(), "num_hidden_layers",
                  fmt::format("{} but the checkpoint has a layer {}", c.num_layers, c.num_layers));
  return c;
}

std::string LlamaConfig::to_hf_config_json() const {
  const bool qwen2 = qkv_bias && !o_bias;  // biased q/k/v only: how Qwen2 configs say it
  json j = {
      {"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", qwen2 ? "qwen2" : "llama"},
      {"hidden_act", "silu"},
      {"hidden_size", hidden_size},
      {"intermediate_size", intermediate_size},
      {"num_hidden_layers", num_layers},
      {"num_attention_heads", num_heads},
      {"num_key_value_heads", num_kv_heads},
      {"head_dim", head_dim},
      {"vocab_size", vocab_size},
      {"max_position_embeddings", max_position_embeddings},
      {"rms_norm_eps", rms_norm_eps},
      {"rope_theta", rope_theta},
      {"tie_word_embeddings", tie_word_embeddings},
      {"attention_bias", qkv_bias && o_bias},
      {"mlp_bias", mlp_bias},
  };
  return j.dump(2) + "\n";
}

}  // namespace wl
