#include "weightloader/engine/llama_config.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "model/config_fields.hpp"
#include "model/gguf_config.hpp"
#include "families/family.hpp"
#include "model/hf_layer_widths.hpp"
#include "model/language_model_names.hpp"

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
  return config_invalid(file, field, why);
}

LlamaConfig from_llama2c(const WeightSource& s) {
  const MetadataFields m(s.metadata(), s.origin());
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
  // An odd count is transformers' (int(head_dim x partial_rotary_factor), rounded up to pairs); other
  // sources' are refused.
  if (c.rotary_dims() == 0 || 2 * c.rotary_pairs() > c.head_dim || (c.rotary_dims() % 2 && c.origin != "config.json"))
    throw invalid(file, c.rotary_dims() != c.head_dim ? "partial_rotary_factor" : "head_dim",
                  fmt::format("{} rotary dimensions of a {}-wide head: rotary embeddings need pairs", c.rotary_dims(), c.head_dim));
  if (c.moe.num_experts > kMaxLayers) throw invalid(file, "num_experts", fmt::format("{} is above the supported maximum {}", c.moe.num_experts, kMaxLayers));
  if (c.moe.num_experts) positive(c.moe.expert_intermediate_size, "moe_intermediate_size", kMaxWidth);
  if (c.moe.shared_expert_intermediate_size > kMaxWidth) throw invalid(file, "shared_expert_intermediate_size", "is above the supported maximum");
  for (const bool sliding : {false, true}) {  // every layer's rotary settings, then the sliding layers' own
    if (sliding && !c.sliding_rope_theta) break;
    const RopeScaling& r = sliding ? c.sliding_rope_scaling : c.rope_scaling;
    const std::string at = sliding ? "rope_parameters.sliding_attention." : "rope_scaling.";
    const double scaled = r.factor * double(r.type == "yarn" ? r.original_max_position_embeddings : c.max_position_embeddings);
    if (r.type == "yarn" && c.rotary_dims() % 2)  // transformers' ramp has a value fewer than its frequencies
      throw invalid(file, "partial_rotary_factor", fmt::format("{} rotary dimensions: yarn needs an even count", c.rotary_dims()));
    if ((r.type == "yarn" || r.type == "dynamic") && !(scaled <= double(kMaxPositions)))
      throw invalid(file, at + "factor", fmt::format("{} extends the context beyond the supported maximum {}", r.factor, kMaxPositions));
    if (r.type == "longrope")
      for (const auto* list : {&r.short_factor, &r.long_factor})
        if (list->size() != c.rotary_pairs())
          throw invalid(file, at + (list == &r.short_factor ? "short_factor" : "long_factor"),
                        fmt::format("has {} factors; {} rotary dimensions need {}", list->size(), c.rotary_dims(), c.rotary_pairs()));
    const double theta = sliding ? c.sliding_rope_theta : c.rope_theta;
    if (!(theta > 0) || !std::isfinite(theta)) throw invalid(file, sliding ? at + "rope_theta" : "rope_theta", "must be a positive number");
  }
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps)) throw invalid(file, "rms_norm_eps", "must be a positive number");
  if (c.latent_attention()) {
    positive(c.mla.kv_lora_rank, "kv_lora_rank", kMaxWidth);
    positive(c.mla.qk_nope_head_dim, "qk_nope_head_dim", kMaxWidth);
    positive(c.mla.v_head_dim, "v_head_dim", kMaxWidth);
    if (c.mla.q_lora_rank > kMaxWidth) throw invalid(file, "q_lora_rank", fmt::format("{} is above the supported maximum {}", c.mla.q_lora_rank, kMaxWidth));
  }
  if (c.prediction_layers > kMaxLayers) throw invalid(file, "num_nextn_predict_layers", "is above the supported maximum");
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

// A tensor the checkpoint must not have: one of a sub-block the configuration says the layer skips.
void check_absent(const WeightSource& s, const std::string& name, uint64_t layer, const char* block) {
  if (s.find(name))
    throw Error(ErrorCode::ConfigInvalid, fmt::format("the configuration skips layer {}'s {} (no_op) but the checkpoint has this tensor", layer, block),
                s.origin(), name);
}

void check_experts(const WeightSource& s, const LlamaConfig& c, uint64_t l, const std::string& dims) {
  const std::string at = fmt::format("model.layers.{}.", l);
  const uint64_t E = c.moe.num_experts, ff = c.moe.expert_intermediate_size;
  const std::string moe = fmt::format("{}, {} experts of {} units", dims, E, ff);
  const Family* family = family_by_type(c.architecture);
  const MlpNames& names = mlp_names(c.architecture);
  const std::string module = at + std::string(names.moe) + ".";
  const uint64_t D = c.hidden_size;
  check_shape(s, module + std::string(names.router) + ".weight", {E, D}, moe);
  if (c.moe.router_bias) check_shape(s, module + std::string(names.router) + ".bias", {E}, moe);
  if (c.moe.stacked()) {  // gpt-oss, Llama 4: transformers 5's stacks, stored transposed
    check_shape(s, module + "experts.gate_up_proj", {E, D, 2 * ff}, moe);
    check_shape(s, module + "experts.down_proj", {E, ff, D}, moe);
    if (c.moe.expert_bias) {
      check_shape(s, module + "experts.gate_up_proj_bias", {E, 2 * ff}, moe);
      check_shape(s, module + "experts.down_proj_bias", {E, D}, moe);
    }
  } else {
    const char* count = family && family->experts == Family::Experts::Mixtral ? "num_local_experts" : c.latent_attention() ? "n_routed_experts" : "num_experts";
    check_shape(s, fmt::format("{}experts.0.{}.weight", module, names.gate), {ff, D}, moe);
    if (c.moe.expert_bias) check_shape(s, fmt::format("{}experts.0.{}.bias", module, names.gate), {ff}, moe);
    if (s.find(fmt::format("{}experts.{}.{}.weight", module, E, names.gate)))
      throw invalid(s.origin(), count, fmt::format("{} but the checkpoint has an expert {}", E, E));
  }
  if (c.moe.score_correction_bias) check_shape(s, module + "gate.e_score_correction_bias", {E}, moe);
  if (names.shared.empty()) return;
  const std::string shared = at + std::string(names.shared) + ".";
  const uint64_t units = c.moe.shared_expert_intermediate_size;
  if (c.fused_shared_gate_up)  // gate rows, then up rows (Granite-MoE-Shared)
    check_shape(s, shared + std::string(names.shared_gate_up) + ".weight", {2 * units, c.hidden_size}, moe);
  else
    check_shape(s, shared + "gate_proj.weight", {units, c.hidden_size}, moe);
}

// Latent attention's projections against its widths (every head's rows; the latent's columns).
void check_latent_attention(const WeightSource& s, const LlamaConfig& c, const std::string& at, const std::string& dims) {
  const LatentAttention& a = c.mla;
  const uint64_t D = c.hidden_size, H = c.num_heads;
  const std::string widths = fmt::format("{}, q_lora_rank {}, kv_lora_rank {}, qk_nope/rope/v head dims {}/{}/{}", dims, a.q_lora_rank,
                                         a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim);
  if (a.q_lora_rank) {
    check_shape(s, at + "q_a_proj.weight", {a.q_lora_rank, D}, widths);
    check_shape(s, at + "q_b_proj.weight", {H * a.qk_head_dim(), a.q_lora_rank}, widths);
    if (s.find(at + "q_proj.weight")) throw invalid(s.origin(), "q_lora_rank", fmt::format("{} but the checkpoint has q_proj", a.q_lora_rank));
  } else {
    check_shape(s, at + "q_proj.weight", {H * a.qk_head_dim(), D}, widths);
    if (s.find(at + "q_a_proj.weight")) throw invalid(s.origin(), "q_lora_rank", "null but the checkpoint has q_a_proj");
  }
  check_shape(s, at + "kv_a_proj_with_mqa.weight", {a.kv_lora_rank + a.qk_rope_head_dim, D}, widths);
  check_shape(s, at + "kv_b_proj.weight", {H * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank}, widths);
  check_shape(s, at + "o_proj.weight", {D, H * a.v_head_dim}, widths);
}

// Layer l's tensors against the layer's widths (of whichever MLP it has).
void check_layer(const WeightSource& s, const LlamaConfig& c, uint64_t l) {
  const uint64_t kv_dim = c.layer_kv_heads(l) * c.head_dim, ff = c.layer_intermediate_size(l);
  const std::string at = fmt::format("model.layers.{}.", l);
  const std::string dims = fmt::format("layer {}: hidden_size {}, heads {} x head_dim {}, kv heads {}, intermediate_size {}", l, c.hidden_size,
                                       c.num_heads, c.head_dim, c.layer_kv_heads(l), ff);
  if (kv_dim && c.latent_attention()) {
    check_latent_attention(s, c, at + "self_attn.", dims);
  } else if (kv_dim) {
    check_shape(s, at + "self_attn.q_proj.weight", {c.q_dim(), c.hidden_size}, dims);
    check_shape(s, at + "self_attn.k_proj.weight", {kv_dim, c.hidden_size}, dims);
    check_shape(s, at + "self_attn.v_proj.weight", {kv_dim, c.hidden_size}, dims);
    check_shape(s, at + "self_attn.qkv_proj.weight", {c.q_dim() + 2 * kv_dim, c.hidden_size}, dims);
    check_shape(s, at + "self_attn.o_proj.weight", {c.hidden_size, c.q_dim()}, dims);
    if (c.attention_sinks) check_shape(s, at + "self_attn.sinks", {c.num_heads}, dims);
  } else {
    for (const char* t : {"self_attn.q_proj.weight", "self_attn.qkv_proj.weight", "self_attn.o_proj.weight"}) check_absent(s, at + t, l, "attention");
  }
  if (c.moe_layer(l)) {
    check_experts(s, c, l, dims);
  } else if (ff) {
    const std::string mlp = at + std::string(mlp_names(c.architecture).dense) + ".";
    check_shape(s, mlp + "gate_proj.weight", {ff, c.hidden_size}, dims);
    check_shape(s, mlp + "up_proj.weight", {ff, c.hidden_size}, dims);
    check_shape(s, mlp + "gate_up_proj.weight", {2 * ff, c.hidden_size}, dims);
    check_shape(s, mlp + "down_proj.weight", {c.hidden_size, ff}, dims);
  } else {
    for (const char* t : {"mlp.gate_proj.weight", "mlp.gate_up_proj.weight", "mlp.down_proj.weight"}) check_absent(s, at + t, l, "MLP");
  }
}

// Checks the configuration's widths against every layer's tensors before anything is allocated.
void check_tensors(const WeightSource& s, const LlamaConfig& c) {
  const std::string dims = fmt::format("hidden_size {}, vocab_size {}", c.hidden_size, c.vocab_size);
  check_shape(s, "model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, dims);
  check_shape(s, "lm_head.weight", {c.vocab_size, c.hidden_size}, dims);
  for (uint64_t l = 0; l < c.num_layers; ++l) check_layer(s, c, l);
  // DeepSeek-V3's prediction layers follow the last: their tensors are there, and not read.
  if (!c.prediction_layers && s.find(fmt::format("model.layers.{}.{}.weight", c.num_layers, c.post_norms_only ? "post_attention_layernorm" : "input_layernorm")))
    throw invalid(s.origin(), "num_hidden_layers", fmt::format("{} but the checkpoint has a layer {}", c.num_layers, c.num_layers));
}

// The configuration the checkpoint carries, as its own file says it.
LlamaConfig configuration_of(const WeightSource& s) {
  if (auto it = s.metadata().find("config.json"); it != s.metadata().end())
    return llama_config_from_hf_json(it->second, s.origin() + "/config.json");
  if (s.metadata().count("params.json")) return from_meta_params(s);
  if (s.metadata().count("general.architecture")) return llama_config_from_gguf(s.metadata(), s.origin());
  if (s.format() == "llama2c") return from_llama2c(s);
  throw Error(ErrorCode::ConfigMissing,
              "no model configuration: expected a config.json beside the weights, GGUF llama.* metadata or a llama2.c header",
              s.origin());
}

// `c` completed from the tensors' presence and checked against their shapes.
LlamaConfig checked_against(LlamaConfig c, const WeightSource& s) {
  const TensorInfo* embed = s.find("model.embed_tokens.weight");
  if (c.vocab_size == 0 && embed && embed->shape.size() == 2) c.vocab_size = embed->shape[0];
  if (!s.find("lm_head.weight")) c.tie_word_embeddings = true;
  if (c.origin == "gguf") {  // GGUF says no bias flag: llama.cpp uses the bias tensors the file has
    const std::string l0 = "model.layers.0.";
    c.qkv_bias = s.find(l0 + "self_attn.q_proj.bias") || s.find(l0 + "self_attn.qkv_proj.bias");
    c.o_bias = s.find(l0 + "self_attn.o_proj.bias") != nullptr;
    c.mlp_bias = s.find(l0 + "mlp.down_proj.bias") != nullptr;
  }
  // Phi-3 (and vLLM-fused checkpoints) store q/k/v and gate/up stacked: each rank reads its rows of each part.
  c.fused_checkpoint = s.find("model.layers.0.self_attn.qkv_proj.weight") != nullptr;
  if (c.fused_checkpoint && !c.moe_layer(0) && !s.find("model.layers.0.mlp.gate_up_proj.weight"))
    throw invalid(s.origin(), "model.layers.0.mlp.gate_up_proj.weight",
                  "the checkpoint fuses qkv_proj but not gate_up_proj; the engine reads both fused or both split");
  // GLM-4 stores gate_up_proj fused beside split q/k/v.
  c.fused_gate_up = c.fused_checkpoint || s.find("model.layers.0.mlp.gate_up_proj.weight") != nullptr;
  const MlpNames& names = mlp_names(c.architecture);
  uint64_t sparse = 0;  // the first sparse layer
  while (sparse < c.num_layers && !c.moe_layer(sparse)) ++sparse;
  if (!names.shared_gate_up.empty())
    c.fused_shared_gate_up = s.find(fmt::format("model.layers.{}.{}.{}.weight", sparse, names.shared, names.shared_gate_up)) != nullptr;
  // gpt-oss's and Llama 4's experts: read in transformers 5's stacks where the checkpoint has them,
  // else one tensor per expert (their GGUF, whichever configuration it is read with).
  const std::string experts = fmt::format("model.layers.{}.{}.experts.", sparse, names.moe);
  if (c.moe.stacked() && !s.find(experts + "gate_up_proj") && s.find(fmt::format("{}0.{}.weight", experts, names.gate)))
    c.moe.stacks = MoeConfig::Stacks::None;
  validate(c, s.origin());
  check_tensors(s, c);
  return c;
}

}  // namespace

LlamaConfig llama_config_from_source(const WeightSource& checkpoint) {
  LlamaConfig c = configuration_of(checkpoint);
  if (c.multimodal.empty()) return checked_against(std::move(c), checkpoint);
  return checked_against(std::move(c), *language_model_of(checkpoint));
}

uint64_t LlamaConfig::window_layer(uint64_t l) const {
  if (!sliding_layers.empty()) return l < sliding_layers.size() && sliding_layers[l] ? sliding_window : 0;
  if (!sliding_window || l < sliding_window_from || l % sliding_window_every != 0) return 0;
  return sliding_window;
}

uint64_t LlamaConfig::chunk_layer(uint64_t l) const {
  return l < chunked_layers.size() && chunked_layers[l] ? attention_chunk_size : 0;
}

bool LlamaConfig::moe_layer(uint64_t l) const {
  if (!moe.num_experts || l < moe.first_dense_layers || (l + 1) % moe.decoder_sparse_step != 0) return false;
  return std::find(moe.mlp_only_layers.begin(), moe.mlp_only_layers.end(), l) == moe.mlp_only_layers.end();
}

namespace {

// rope_scaling as transformers reads it back to the same frequencies (derived values written out).
json rope_scaling_json(const RopeScaling& r) {
  json j{{"rope_type", r.type}};
  if (r.type == "longrope") {
    j["short_factor"] = r.short_factor, j["long_factor"] = r.long_factor, j["attention_factor"] = r.attention_factor;
    return j;  // the pretrained context goes at the top level, as Phi-3 writes it
  }
  j["factor"] = r.factor;
  if (r.type == "llama3") {
    j["low_freq_factor"] = r.low_freq_factor, j["high_freq_factor"] = r.high_freq_factor;
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
  } else if (r.type == "yarn") {
    j["original_max_position_embeddings"] = r.original_max_position_embeddings, j["attention_factor"] = r.attention_factor;
    j["beta_fast"] = r.beta_fast, j["beta_slow"] = r.beta_slow, j["truncate"] = r.truncate;
    if (r.mscale_all_dim) j["mscale_all_dim"] = r.mscale_all_dim;  // latent attention's scale reads it
  }
  return j;
}

// One layer type's entry of transformers 5's rope_parameters: rope_scaling's, with the theta and,
// for longrope, what Phi-3 keeps at the top level.
json rope_parameters_json(double theta, const RopeScaling& r) {
  json j = r.type.empty() ? json{{"rope_type", "default"}} : rope_scaling_json(r);
  j["rope_theta"] = theta;
  if (r.type == "longrope") j["original_max_position_embeddings"] = r.original_max_position_embeddings, j["factor"] = r.factor;
  return j;
}

// The context a rope scaling lets the model run.
uint64_t scaled_context(const RopeScaling& r, uint64_t max_position_embeddings) {
  if (r.type == "yarn") return std::max(max_position_embeddings, uint64_t(r.factor * double(r.original_max_position_embeddings)));
  if (r.type == "dynamic") return uint64_t(r.factor * double(max_position_embeddings));
  return max_position_embeddings;
}

}  // namespace

uint64_t LlamaConfig::context_length() const {
  const uint64_t every = scaled_context(rope_scaling, max_position_embeddings);
  return sliding_rope_theta ? std::min(every, scaled_context(sliding_rope_scaling, max_position_embeddings)) : every;
}

std::string LlamaConfig::features() const {
  std::vector<std::string> f;
  if (qkv_bias) f.push_back(o_bias ? "q/k/v/o biases" : "q/k/v biases");
  if (mlp_bias) f.push_back("MLP biases");
  if (!layer_widths.empty()) {
    std::vector<uint64_t> ff, kv;
    for (const LayerWidths& w : layer_widths) ff.push_back(w.intermediate_size), kv.push_back(w.num_kv_heads);
    f.push_back(fmt::format("per-layer widths (intermediate_size {}, kv heads {}; 0: skipped)", ff, kv));
  }
  if (num_kv_heads != num_heads) f.push_back(fmt::format("GQA ({} heads, {}{} kv)", num_heads, layer_widths.empty() ? "" : "at most ", num_kv_heads));
  if (head_dim * num_heads != hidden_size && !latent_attention()) f.push_back(fmt::format("head_dim {} ≠ hidden/heads", head_dim));
  if (rotary_dims() != head_dim) f.push_back(fmt::format("partial rotary ({} of {})", rotary_dims(), head_dim));
  if (!rope_scaling.type.empty()) f.push_back(fmt::format("rope scaling {} x{}", rope_scaling.type, rope_scaling.factor));
  if (sliding_rope_theta)
    f.push_back(fmt::format("sliding layers' rope theta {}{}", sliding_rope_theta,
                            sliding_rope_scaling.type.empty() ? "" : fmt::format(" scaling {} x{}", sliding_rope_scaling.type, sliding_rope_scaling.factor)));
  if (sliding_window)
    f.push_back(fmt::format("sliding window {} ({})", sliding_window,
                            !sliding_layers.empty() ? fmt::format("{} of {} layers, as listed", std::count(sliding_layers.begin(), sliding_layers.end(), true), sliding_layers.size())
                            : sliding_window_every == 2 ? "alternate layers" : sliding_window_from ? fmt::format("from layer {}", sliding_window_from) : "all layers"));
  if (attn_logit_softcapping) f.push_back(fmt::format("attention soft-cap {}", attn_logit_softcapping));
  if (final_logit_softcapping) f.push_back(fmt::format("final logit soft-cap {}", final_logit_softcapping));
  if (query_pre_attn_scalar) f.push_back(fmt::format("query_pre_attn_scalar {}", query_pre_attn_scalar));
  if (norm_weight_offset) f.push_back("(1+w) RMSNorm");
  if (scale_embeddings) f.push_back("embeddings x sqrt(hidden)");
  if (sandwich_norms) f.push_back(glm_norms ? "four norms per block (GLM's)" : "four norms per block");
  if (rope_adjacent_pairs) f.push_back("rope in adjacent pairs");
  if (qk_norm) f.push_back("q/k RMSNorm per head");
  if (qk_norm_whole) f.push_back("q/k RMSNorm over the whole projection");
  if (post_norms_only) f.push_back("sublayer outputs normalised, not inputs");
  if (embedding_multiplier != 1 || attention_multiplier || residual_multiplier != 1 || logits_scaling != 1)
    f.push_back(fmt::format("multipliers: embedding {}, attention {}, residual {}, logits / {}", embedding_multiplier,
                            attention_multiplier, residual_multiplier, logits_scaling));
  if (!rope_layers.empty())
    f.push_back(fmt::format("{} of {} layers without rope", std::count(rope_layers.begin(), rope_layers.end(), false), rope_layers.size()));
  if (qk_l2_norm) f.push_back("q/k L2 norm after rope");
  if (attention_chunk_size)
    f.push_back(fmt::format("chunked attention {} ({} of {} layers)", attention_chunk_size,
                            std::count(chunked_layers.begin(), chunked_layers.end(), true), num_layers));
  if (attn_floor_scale) f.push_back(fmt::format("attention temperature tuning on layers without rope (floor_scale {}, attn_scale {})", attn_floor_scale, attn_scale));
  if (hidden_act != "silu") f.push_back(hidden_act);
  if (fused_checkpoint) f.push_back("fused qkv_proj/gate_up_proj stored");
  else if (fused_gate_up) f.push_back("fused gate_up_proj stored");
  if (latent_attention())
    f.push_back(fmt::format("latent attention (q {}, kv_lora_rank {}, qk nope/rope {}/{}, v {}, {} rope pairs{})",
                            mla.q_lora_rank ? fmt::format("lora_rank {}", mla.q_lora_rank) : "q_proj", mla.kv_lora_rank, mla.qk_nope_head_dim,
                            mla.qk_rope_head_dim, mla.v_head_dim, mla.interleaved_rope ? "adjacent" : "half-split",
                            mla.softmax_scale * std::sqrt(double(mla.qk_head_dim())) != 1.0 ? fmt::format(", softmax scale {:.6g}", mla.softmax_scale) : ""));
  if (moe.num_experts) {
    std::string experts = fmt::format("{} experts, top-{}{}", moe.num_experts, moe.experts_per_token, moe.norm_topk_prob ? " renormalised" : "");
    if (moe.scoring == MoeConfig::Scoring::Sigmoid) experts += ", sigmoid scores";
    if (moe.score_correction_bias) experts += " + correction bias to choose";
    if (moe.groups > 1)
      experts += fmt::format(", best {} of {} groups (by {})", moe.topk_groups, moe.groups, moe.group_by_top_two ? "top-2 sum" : "best expert");
    if (moe.routed_scaling_factor != 1) experts += fmt::format(", weights x{}", moe.routed_scaling_factor);
    if (moe.shared_expert_intermediate_size)
      experts += moe.shared_expert_gated ? ", gated shared expert" : fmt::format(", shared experts of {} units", moe.shared_expert_intermediate_size);
    if (moe.router_bias) experts += ", biased router";
    if (moe.stacked() || moe.expert_bias)
      experts += fmt::format(", {}experts{}", moe.stacked() ? "stacked " : "", moe.expert_bias ? " with biases" : "");
    if (moe.clamped_swiglu()) experts += fmt::format(", clamped SwiGLU (limit {}, alpha {})", moe.swiglu_limit, moe.swiglu_alpha);
    if (moe.weight_input) experts += ", weights on the experts' inputs";
    if (!moe.mlp_only_layers.empty() || moe.decoder_sparse_step != 1) {
      uint64_t sparse = 0;
      for (uint64_t l = 0; l < num_layers; ++l) sparse += moe_layer(l);
      experts += fmt::format(", {} of {} layers sparse", sparse, num_layers);
    }
    if (moe.first_dense_layers)
      experts += moe.first_dense_layers == 1 ? ", layer 0 dense" : fmt::format(", layers 0-{} dense", moe.first_dense_layers - 1);
    f.push_back(experts);
  }
  if (prediction_layers) f.push_back(fmt::format("prediction layers not run ({})", prediction_layers));
  if (attention_sinks) f.push_back("attention sinks");
  if (!multimodal.empty()) f.push_back(fmt::format("the language model of a {} (its vision tensors not read)", multimodal));
  f.push_back(tie_word_embeddings ? "tied head" : "untied head");
  return fmt::format("{}: {}", architecture, fmt::join(f, ", "));
}

double LatentAttention::scaled_softmax(const RopeScaling& r) const {
  double scale = 1.0 / std::sqrt(double(qk_head_dim()));
  if (!r.type.empty() && r.mscale_all_dim && r.factor > 1) {
    const double m = 0.1 * r.mscale_all_dim * std::log(r.factor) + 1.0;
    scale *= m * m;
  }
  return scale;
}

std::string LlamaConfig::to_hf_config_json() const {
  const Family* family = family_by_type(architecture);
  if (!family) throw Error(ErrorCode::ConfigInvalid, fmt::format("no config.json for architecture '{}'", architecture));
  // A Llama (the first family listed) whose q/k/v alone have biases, which a Llama config cannot say,
  // is said as the first dense family whose attention always has exactly those (Qwen2).
  if (family == families().front() && qkv_bias && !o_bias)
    family = *std::find_if(families().begin(), families().end(), [](const Family* f) {
      return f->biases == Family::Biases::QkvOnly && f->experts == Family::Experts::None;
    });
  const std::string type(family->model_type);
  if (family->latent_attention)  // only ever read from its own config.json, which a conversion copies
    throw Error(ErrorCode::ConfigInvalid, fmt::format("no config.json is written for {} (latent attention)", type));
  if (family->experts == Family::Experts::GptOss)
    throw Error(ErrorCode::ConfigInvalid, fmt::format("no config.json is written for {} (stacked experts, attention sinks)", type));
  if (family->experts == Family::Experts::Llama4)  // only ever read from its own config.json, which a conversion copies
    throw Error(ErrorCode::ConfigInvalid, fmt::format("no config.json is written for {} (stacked experts, chunked attention)", type));
  json j = {
      {"architectures", {family->architecture}},
      {"model_type", type},
      {std::string(family->activation_key), hidden_act},
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
  };
  if (family->biases == Family::Biases::Attention) j["attention_bias"] = qkv_bias && o_bias;
  if (family->biases == Family::Biases::QkvDefault) j[std::string(family->qkv_bias_key)] = qkv_bias;
  if (family->mlp_bias && !family->decilm) j["mlp_bias"] = mlp_bias;
  if (family->decilm) {
    j["attention_bias"] = o_bias, j["qkv_bias"] = qkv_bias, j["mlp_bias"] = mlp_bias;
    j["block_configs"] = block_configs_json(*this);
  } else if (!layer_widths.empty()) {
    // Outside DeciLM's block_configs config.json says per-layer FFN widths only.
    std::vector<uint64_t> ff;
    for (const LayerWidths& w : layer_widths) {
      if (w.num_kv_heads != num_kv_heads || !w.intermediate_size)
        throw Error(ErrorCode::ConfigInvalid, fmt::format("no {} config.json for per-layer kv heads or skipped sub-blocks", type));
      ff.push_back(w.intermediate_size);
    }
    j["intermediate_size"] = ff;
  }
  if (rotary_dims() != head_dim && !family->partial_rotary)
    throw Error(ErrorCode::ConfigInvalid, fmt::format("no config.json for {} with partial rotary: transformers' {} turns whole heads", type, type));
  if (rotary_dims() != head_dim || family->partial_rotary_factor != 1)
    j["partial_rotary_factor"] = double(rotary_dims()) / double(head_dim);
  if (sliding_rope_theta) {  // per layer type, as transformers 5 writes it
    j.erase("rope_theta");
    j["rope_parameters"] = {{"full_attention", rope_parameters_json(rope_theta, rope_scaling)},
                            {"sliding_attention", rope_parameters_json(sliding_rope_theta, sliding_rope_scaling)}};
  } else {
    if (!rope_scaling.type.empty()) j["rope_scaling"] = rope_scaling_json(rope_scaling);
    if (rope_scaling.type == "longrope") j["original_max_position_embeddings"] = rope_scaling.original_max_position_embeddings;
  }
  if (sliding_window) j["sliding_window"] = sliding_window;
  if (family->multipliers) {
    j["embedding_multiplier"] = embedding_multiplier, j["attention_multiplier"] = attention_multiplier;
    j["residual_multiplier"] = residual_multiplier, j["logits_scaling"] = logits_scaling;
  }
  if (!rope_layers.empty()) {
    json turns = json::array();
    for (const bool turn : rope_layers) turns.push_back(turn ? 1 : 0);
    j["no_rope_layers"] = turns;
  }
  if (!sliding_layers.empty()) {
    json types = json::array();
    for (const bool sliding : sliding_layers) types.push_back(sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
  }
  if (sliding_window && (family->window == Family::Window::FromLayer || family->window == Family::Window::AllWhenUsed))
    j["use_sliding_window"] = true;
  if (sliding_window && family->window == Family::Window::FromLayer) j["max_window_layers"] = sliding_window_from;
  if (family->gemma2) {
    j["attn_logit_softcapping"] = attn_logit_softcapping ? json(attn_logit_softcapping) : json();
    j["final_logit_softcapping"] = final_logit_softcapping ? json(final_logit_softcapping) : json();
    j["query_pre_attn_scalar"] = query_pre_attn_scalar;
  }
  switch (family->experts) {
    case Family::Experts::None:
    case Family::Experts::DeepseekV2:  // refused above
    case Family::Experts::DeepseekV3:
    case Family::Experts::GptOss:
    case Family::Experts::Llama4: break;
    case Family::Experts::Mixtral:
      j["num_local_experts"] = moe.num_experts, j["num_experts_per_tok"] = moe.experts_per_token;
      if (family->shared_mlp) j["shared_intermediate_size"] = moe.shared_expert_intermediate_size;
      break;
    case Family::Experts::Qwen2Moe:
    case Family::Experts::Qwen3Moe:
      // transformers 5's key for the count: num_experts for Qwen2-MoE, num_local_experts for Qwen3-MoE
      j[family->experts == Family::Experts::Qwen2Moe ? "num_experts" : "num_local_experts"] = moe.num_experts;
      j["num_experts_per_tok"] = moe.experts_per_token;
      j["moe_intermediate_size"] = moe.expert_intermediate_size, j["norm_topk_prob"] = moe.norm_topk_prob;
      if (family->experts == Family::Experts::Qwen2Moe) j["shared_expert_intermediate_size"] = moe.shared_expert_intermediate_size;
      j["decoder_sparse_step"] = moe.decoder_sparse_step, j["mlp_only_layers"] = moe.mlp_only_layers;
      break;
  }
  if (!eos_token_ids.empty()) j["eos_token_id"] = eos_token_ids.size() == 1 ? json(eos_token_ids[0]) : json(eos_token_ids);
  return j.dump(2) + "\n";
}

}  // namespace wl
