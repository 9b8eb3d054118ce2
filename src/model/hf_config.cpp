// config.json of each family the engine runs, read into the one model description (LlamaConfig).
// What a family's transformers implementation does with a field is what the engine does; a field
// that would change the math in a way the engine cannot follow is refused, naming it.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "model/config_fields.hpp"
#include "model/family_routing.hpp"
#include "families/family.hpp"
#include "model/hf_layer_widths.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

namespace {

using nlohmann::json;

std::string family_list(bool architectures) {
  std::string out;
  for (const Family* f : families())
    if (!architectures || out.find(f->architecture) == std::string::npos)
      out += fmt::format("{}{}", out.empty() ? "" : ", ", architectures ? f->architecture : f->model_type);
  return out;
}

// The family of the model_type (from the architecture when only that is given; Llama when neither is).
const Family& family_of(const JsonFields& f) {
  const std::string type = f.string("model_type");
  const Family* family = type.empty() ? nullptr : family_by_type(type);
  if (!type.empty() && !family)
    throw config_invalid(f.file(), "model_type", fmt::format("'{}' is not a family the engine runs ({})", type, family_list(false)));
  if (f.has("architectures")) {
    if (!f.at("architectures").is_array()) throw config_invalid(f.file(), "architectures", "is not a list");
    for (const json& a : f.at("architectures")) {
      const Family* match = a.is_string() ? family_by_architecture(a.get<std::string>()) : nullptr;
      if (!match) throw config_invalid(f.file(), "architectures", fmt::format("{} is not one the engine runs ({})", a.dump(), family_list(true)));
      if (!family) family = match;
    }
  }
  return family ? *family : *family_by_type("llama");
}

std::string activation(const JsonFields& f, const Family& family) {
  // The field the family's MLP reads (Gemmas: the tanh approximation unless set).
  const std::string key(family.activation_key);
  std::string act = f.string(key.c_str(), family.gemma_norms ? "gelu_pytorch_tanh" : "silu");
  if (act == "gelu_new" || (act == "gelu" && family.gelu_is_tanh)) act = "gelu_pytorch_tanh";  // the same tanh approximation
  if (act == "swish") act = "silu";  // transformers' other name for it
  if (act != "silu" && act != "gelu" && act != "gelu_pytorch_tanh")
    throw config_invalid(f.file(), key, fmt::format("'{}' is not supported (silu, swish, gelu, gelu_pytorch_tanh, gelu_new)", act));
  return act;
}

// Factors as JSON numbers, one per rotary frequency (their count is checked with the head's size).
std::vector<float> factor_list(const JsonFields& f, const std::string& field, const char* key) {
  if (!f.has(key) || !f.at(key).is_array() || f.at(key).empty())
    throw config_invalid(f.file(), fmt::format("{}.{}", field, key), "must be a non-empty list of numbers");
  const nlohmann::json& v = f.at(key);
  std::vector<float> out;
  for (const nlohmann::json& x : v) {
    if (!x.is_number() || !(x.get<double>() > 0))
      throw config_invalid(f.file(), fmt::format("{}.{}", field, key), fmt::format("{} is not a positive number", x.dump()));
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

constexpr const char* kOriginalContext = "original_max_position_embeddings";

// A rope_scaling object (transformers 4) or one of rope_parameters (transformers 5), `field` naming
// it, as transformers 5's modeling_rope_utils reads each type (and the family: Phi-3's legacy su and
// yarn are its longrope). rope_parameters' also carry rope_theta and partial_rotary_factor (read by
// the caller). The pretrained context is the top-level one, which transformers 5 moves in over the
// object's, else the object's, else max_position_embeddings.
RopeScaling read_scaling(const JsonFields& top, const json& object, const std::string& field, bool parameters, const Family& family) {
  RopeScaling r;
  if (!object.is_object()) throw config_invalid(top.file(), field, "is not an object");
  const JsonFields f(object, top.file());
  std::string type = f.string("rope_type", f.string("type"));
  if (f.has("type") && f.string("type") != type)
    throw config_invalid(top.file(), field + ".type", fmt::format("'{}' disagrees with rope_type '{}'", f.string("type"), type));
  if (family.rope_types_as_longrope && (type == "su" || type == "yarn")) type = "longrope";
  if (!parameters && (type.empty() || type == "default")) return r;
  static const std::map<std::string, std::set<std::string>> known{
      {"default", {}},
      {"linear", {"factor"}},
      {"llama3", {"factor", "low_freq_factor", "high_freq_factor", kOriginalContext}},
      {"yarn", {"factor", "attention_factor", "beta_fast", "beta_slow", kOriginalContext, "mscale", "mscale_all_dim", "truncate"}},
      {"longrope", {"short_factor", "long_factor", "factor", "attention_factor", kOriginalContext}},
      {"dynamic", {"factor", kOriginalContext}}};
  const auto keys = known.find(type.empty() ? "default" : type);
  if (keys == known.end())
    throw config_invalid(top.file(), field, fmt::format("type '{}' is not supported (default, linear, llama3, yarn, longrope, dynamic)", type));
  // A key that changes the frequencies and is not read would silently change the model.
  for (const auto& [key, value] : object.items())
    if (key != "type" && key != "rope_type" && !keys->second.count(key) && !(parameters && (key == "rope_theta" || key == "partial_rotary_factor")))
      throw config_invalid(top.file(), fmt::format("{}.{}", field, key), fmt::format("is not a {} setting", keys->first));
  if (type.empty() || type == "default") return r;
  r.type = type;
  const uint64_t max_positions = top.uint("max_position_embeddings", 2048);
  const uint64_t context = top.has(kOriginalContext) ? top.uint(kOriginalContext) : f.uint(kOriginalContext, max_positions);
  if (type == "longrope") {
    r.short_factor = factor_list(f, field, "short_factor");
    r.long_factor = factor_list(f, field, "long_factor");
    // Phi-3 keeps the pretrained context at the top level; the factor, unless given, is the ratio of the two.
    r.original_max_position_embeddings = context;
    r.factor = f.number("factor", double(max_positions) / double(context ? context : 1));
    if (r.original_max_position_embeddings == 0 || !(r.factor > 0))
      throw config_invalid(top.file(), kOriginalContext, "longrope needs a positive pretrained context and factor");
    r.attention_factor = f.has("attention_factor") ? f.number("attention_factor", 1.0)
                         : r.factor <= 1 ? 1.0
                                         : std::sqrt(1 + std::log(r.factor) / std::log(double(r.original_max_position_embeddings)));
    return r;
  }
  r.factor = f.number("factor", 0);
  if (!(r.factor >= 1) || !std::isfinite(r.factor)) throw config_invalid(top.file(), field + ".factor", "must be a number of at least 1");
  if (type == "llama3") {
    r.low_freq_factor = f.number("low_freq_factor", 1.0);
    r.high_freq_factor = f.number("high_freq_factor", 4.0);
    r.original_max_position_embeddings = context;
    // Equal factors leave no band between (Llama 4 Scout's 1 and 1); transformers only warns of them.
    if (!(r.high_freq_factor >= r.low_freq_factor) || !(r.low_freq_factor > 0) || r.original_max_position_embeddings == 0)
      throw config_invalid(top.file(), field, "llama3 needs 0 < low_freq_factor <= high_freq_factor and original_max_position_embeddings > 0");
  } else if (type == "yarn") {
    r.original_max_position_embeddings = context;
    r.beta_fast = f.number("beta_fast", 32);
    r.beta_slow = f.number("beta_slow", 1);
    r.truncate = f.boolean("truncate", true);
    r.attention_factor = f.has("attention_factor") ? f.number("attention_factor", 1.0) : yarn_attention_factor(f, r.factor);
    r.mscale_all_dim = f.number("mscale_all_dim", 0);
    if (r.original_max_position_embeddings == 0 || !(r.beta_fast > 0) || !(r.beta_slow > 0) || !(r.attention_factor > 0))
      throw config_invalid(top.file(), field, "yarn needs positive original_max_position_embeddings, beta_fast, beta_slow and attention_factor");
  }
  return r;
}

double partial_rotary_factor(const JsonFields& f, const std::string& field = "partial_rotary_factor", double fallback = 1.0) {
  const double partial = f.number("partial_rotary_factor", fallback);
  if (!(partial > 0 && partial <= 1)) throw config_invalid(f.file(), field, "must be in (0, 1]");
  return partial;
}

// One layer type's rotary settings.
struct Rope {
  double theta = 10000.0;
  double partial = 1.0;  // partial_rotary_factor
  RopeScaling scaling;
  bool operator==(const Rope&) const = default;
};

// config.json's rotary settings by layer type (transformers' layer_types): the same for both unless
// rope_parameters gives them per type; a type it leaves out is empty.
struct Ropes {
  std::optional<Rope> full, sliding;
};

// Transformers turns part of each head only in the families whose code reads partial_rotary_factor
// (Family::partial_rotary); the others turn whole heads, ignoring the factor with the default rope and
// failing with a scaled one (its frequencies then do not fit the head): refused.
void turn_whole_heads(const JsonFields& top, const Family& family, Rope& r, const std::string& field) {
  if (family.partial_rotary || r.partial == 1) return;
  if (!r.scaling.type.empty())
    throw config_invalid(top.file(), field,
                         fmt::format("{} with {} rope: {} models turn whole heads (transformers fails on it)", r.partial, r.scaling.type, family.model_type));
  r.partial = 1;
}

// One rope_parameters object (the flat one, or one layer type's). What transformers 4 reads elsewhere
// (the top-level rope_theta and pretrained context, rope_scaling) fills what it leaves out, and must
// agree with what it gives: each version would read only its own. A top-level partial_rotary_factor
// is only its default (transformers 5 itself writes GLM-4's beside the one it reads).
double default_rope_theta(const Family& family) { return family.rope_theta_default ? family.rope_theta_default : 10000.0; }

Rope read_rope_parameters(const JsonFields& top, const json& object, const std::string& field, const Family& family) {
  Rope r;
  r.scaling = read_scaling(top, object, field, true, family);
  for (const char* key : {"rope_theta", kOriginalContext})
    if (top.has(key) && object.contains(key) && !object[key].is_null() && object[key] != top.at(key))
      throw config_invalid(top.file(), fmt::format("{}.{}", field, key),
                           fmt::format("{} disagrees with the top-level {} {}", object[key].dump(), key, top.at(key).dump()));
  if (top.has("rope_scaling") && read_scaling(top, top.at("rope_scaling"), "rope_scaling", false, family) != r.scaling)
    throw config_invalid(top.file(), "rope_scaling", fmt::format("disagrees with {}: transformers 4 reads the one, 5 the other", field));
  const JsonFields f(object, top.file());
  r.theta = f.number("rope_theta", top.number("rope_theta", default_rope_theta(family)));
  if (!(r.theta > 0) || !std::isfinite(r.theta)) throw config_invalid(top.file(), field + ".rope_theta", "must be a positive number");
  r.partial = partial_rotary_factor(f, field + ".partial_rotary_factor",
                                    partial_rotary_factor(top, "partial_rotary_factor", family.partial_rotary_factor));
  turn_whole_heads(top, family, r, field + ".partial_rotary_factor");
  return r;
}

// Transformers 4's rope_theta, partial_rotary_factor and rope_scaling (Gemma 3's for its global
// layers, its local ones turning with rope_local_base_freq), or transformers 5's rope_parameters:
// flat, or per layer type ({"full_attention": {...}, "sliding_attention": {...}}). Where none is
// given, the family's defaults (its config class's).
Ropes read_ropes(const JsonFields& top, const Family& family) {
  const bool per_type = family.sliding_rope_theta_default != 0;
  if (!top.has("rope_parameters")) {
    Rope r;
    r.theta = top.number("rope_theta", default_rope_theta(family));
    r.partial = partial_rotary_factor(top, "partial_rotary_factor", family.partial_rotary_factor);
    if (per_type && top.has("rope_scaling") && top.at("rope_scaling").contains("type") && !top.at("rope_scaling").contains("rope_type") &&
        top.at("rope_scaling")["type"] != "default")
      throw config_invalid(top.file(), "rope_scaling.type",
                           fmt::format("{} reads rope_type only (transformers 5 would run no scaling)", family.model_type));
    if (top.has("rope_scaling"))
      r.scaling = read_scaling(top, top.at("rope_scaling"), "rope_scaling", false, family);
    else if (!family.rope_scaling_default.empty())
      r.scaling = read_scaling(top, json::parse(family.rope_scaling_default), "rope_scaling", false, family);
    turn_whole_heads(top, family, r, "partial_rotary_factor");
    if (!per_type) return {r, r};
    r.scaling.truncate = true;  // moved into the global layers' settings, where yarn's truncate is not read (below)
    Rope local = r;
    local.theta = top.number("rope_local_base_freq", family.sliding_rope_theta_default);
    local.scaling = RopeScaling{};
    return {r, local};
  }
  const json& p = top.at("rope_parameters");
  if (!p.is_object()) throw config_invalid(top.file(), "rope_parameters", "is not an object");
  if (!p.contains("full_attention") && !p.contains("sliding_attention")) {
    if (per_type)
      throw config_invalid(top.file(), "rope_parameters",
                           fmt::format("{} reads it per layer type (full_attention, sliding_attention); transformers 5 ignores a flat one",
                                       family.model_type));
    const Rope r = read_rope_parameters(top, p, "rope_parameters", family);
    return {r, r};
  }
  Ropes out;
  for (const auto& [key, value] : p.items()) {
    const std::string field = "rope_parameters." + key;
    if (key != "full_attention" && key != "sliding_attention")
      throw config_invalid(top.file(), field, "is not a layer type (full_attention, sliding_attention)");
    Rope& r = (key == "full_attention" ? out.full : out.sliding).emplace(read_rope_parameters(top, value, field, family));
    r.scaling.truncate = true;  // transformers 5's yarn reads truncate from the outer object, which has none
  }
  if (out.full && out.sliding && out.full->partial != out.sliding->partial)
    throw config_invalid(top.file(), "rope_parameters.sliding_attention.partial_rotary_factor",
                         "differs from full_attention's: the engine turns the same dimensions of every layer");
  return out;
}

// Whether the model has sliding-window layers (or, !sliding, others), counted without walking
// num_hidden_layers, which is not validated yet.
bool has_layer_type(const LlamaConfig& c, bool sliding) {
  if (c.num_layers == 0) return false;
  if (!c.sliding_layers.empty())
    return c.sliding_window ? std::find(c.sliding_layers.begin(), c.sliding_layers.end(), sliding) != c.sliding_layers.end() : !sliding;
  const uint64_t every = c.sliding_window_every, from = c.sliding_window_from;
  if (!sliding) return !c.sliding_window || from > 0 || (every > 1 && c.num_layers > 1);
  return c.sliding_window && from / every + (from % every != 0) <= (c.num_layers - 1) / every;
}

// Each layer takes its type's rotary settings (windows and head_dim read): the sliding layers have
// their own only where they differ from the others'.
void apply_ropes(const JsonFields& f, const Ropes& r, LlamaConfig& c) {
  for (const bool sliding : {false, true})
    if (has_layer_type(c, sliding) && !(sliding ? r.sliding : r.full))
      throw config_invalid(f.file(), sliding ? "rope_parameters.sliding_attention" : "rope_parameters.full_attention",
                           fmt::format("missing, and this {} has such layers", c.architecture));
  const Rope& every = r.full ? *r.full : *r.sliding;
  c.rope_theta = every.theta;
  c.rope_scaling = every.scaling;
  c.rotary_dim = uint64_t(double(c.head_dim) * every.partial);  // transformers: int(head_dim * factor); validated with the rest
  if (r.full && r.sliding && !(*r.full == *r.sliding)) {
    c.sliding_rope_theta = r.sliding->theta;
    c.sliding_rope_scaling = r.sliding->scaling;
  }
  // transformers 4's Gemma 3 gave the sliding layers' base as rope_local_base_freq (read_ropes);
  // transformers 5 moves it into rope_parameters.sliding_attention, which must then agree.
  if (f.has("rope_local_base_freq")) {
    if (c.sliding_layers.empty()) throw config_invalid(f.file(), "rope_local_base_freq", fmt::format("{} models have no local layers", c.architecture));
    const double local = f.number("rope_local_base_freq", 0);
    if (!(local > 0)) throw config_invalid(f.file(), "rope_local_base_freq", "must be a positive number");
    if (f.has("rope_parameters") && f.at("rope_parameters").contains("sliding_attention") && r.sliding->theta != local)
      throw config_invalid(f.file(), "rope_local_base_freq", fmt::format("{} disagrees with rope_parameters.sliding_attention's rope_theta {}", local, r.sliding->theta));
  }
}

// Which layers slide, and by how much, as each family's transformers code decides it.
void read_windows(const JsonFields& f, const Family& family, LlamaConfig& c) {
  switch (family.window) {
    case Family::Window::None:
      if (f.has("sliding_window"))
        throw config_invalid(f.file(), "sliding_window", fmt::format("{} models have no sliding window", family.model_type));
      return;
    case Family::Window::FromLayer:
      if (!f.boolean("use_sliding_window", false)) return;
      c.sliding_window_from = f.uint("max_window_layers", 28);
      break;
    case Family::Window::AllWhenUsed:
      if (!f.boolean("use_sliding_window", false)) return;
      break;
    case Family::Window::EveryOther: c.sliding_window_every = 2; break;  // layers 0, 2, 4, ...
    case Family::Window::All:
    case Family::Window::Listed: break;  // which ones: read_listed_windows, once the layers are counted
  }
  const bool gemma_default = family.window == Family::Window::EveryOther || (family.window == Family::Window::Listed && family.gemma2);
  c.sliding_window = f.uint("sliding_window", family.sliding_window_default ? family.sliding_window_default : gemma_default ? 4096 : 0);
}

// layer_types (transformers 5) as one flag per layer: true where it names `flagged`, false where
// full_attention; another name, or a list of another length, refused by name.
std::vector<bool> layer_type_flags(const JsonFields& f, uint64_t layers, const std::string& flagged) {
  const json& types = f.at("layer_types");
  if (!types.is_array() || types.size() != layers)
    throw config_invalid(f.file(), "layer_types", fmt::format("is not a list of {} layer types (num_hidden_layers)", layers));
  std::vector<bool> out;
  for (uint64_t l = 0; l < layers; ++l) {
    if (types[l] != "full_attention" && types[l] != flagged)
      throw config_invalid(f.file(), fmt::format("layer_types[{}]", l), fmt::format("{} is not full_attention or {}", types[l].dump(), flagged));
    out.push_back(types[l] == flagged);
  }
  return out;
}

// The sliding layers as layer_types lists them (transformers 5 writes it), else Gemma 3's rule
// (every layer but each sliding_window_pattern-th), or SmolLM3's (rope layers read: with
// use_sliding_window, those that do not turn).
void read_listed_windows(const JsonFields& f, const Family& family, LlamaConfig& c) {
  if (family.window != Family::Window::Listed) return;
  if (f.has("layer_types")) {
    c.sliding_layers = layer_type_flags(f, c.num_layers, "sliding_attention");
    return;
  }
  if (!family.gemma2) {
    if (!f.boolean("use_sliding_window", false)) c.sliding_window = 0;
    for (uint64_t l = 0; c.sliding_window && l < c.num_layers; ++l) c.sliding_layers.push_back(!c.rope_layer(l));
    return;
  }
  const uint64_t pattern = f.uint("sliding_window_pattern", 6);
  if (pattern == 0) throw config_invalid(f.file(), "sliding_window_pattern", "must be positive");
  for (uint64_t l = 0; l < c.num_layers; ++l) c.sliding_layers.push_back((l + 1) % pattern != 0);
}

// Transformers 5 writes which layers slide as layer_types, and the families whose code attends as
// that list says are marked so. Where it names other layers than the family's rule picks (Qwen2-MoE's
// own default: the even layers below max_window_layers), those it names slide.
void follow_layer_types(const JsonFields& f, const Family& family, LlamaConfig& c) {
  if (!f.has("layer_types") || !family.follows_layer_types || family.window == Family::Window::Listed) return;
  const std::vector<bool> sliding = layer_type_flags(f, c.num_layers, "sliding_attention");
  // Without a window (Qwen2's use_sliding_window false) a sliding layer attends to every position too.
  for (uint64_t l = 0; c.sliding_window && l < c.num_layers; ++l)
    if (sliding[l] != (c.window_layer(l) != 0)) {
      c.sliding_layers = sliding;
      return;
    }
}

void read_gemma(const JsonFields& f, const Family& family, LlamaConfig& c) {
  c.norm_weight_offset = c.scale_embeddings = family.gemma_norms;
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"})
    if (!family.gemma2 && f.has(key))
      throw config_invalid(f.file(), key, fmt::format("is a Gemma 2 field; {} models do not apply it", family.model_type));
  if (!family.gemma2) return;
  c.sandwich_norms = true;
  c.attn_logit_softcapping = family.attn_softcap ? f.number("attn_logit_softcapping", 0) : 0;
  c.final_logit_softcapping = f.number("final_logit_softcapping", 0);
  c.query_pre_attn_scalar = f.number("query_pre_attn_scalar", 256);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"}) {
    const double v = f.number(key, 0);
    if (v < 0 || !std::isfinite(v)) throw config_invalid(f.file(), key, "must be a positive number");
  }
  if (c.query_pre_attn_scalar == 0) throw config_invalid(f.file(), "query_pre_attn_scalar", "must be a positive number");
}

std::vector<uint64_t> layer_list(const JsonFields& f, const char* key) {
  std::vector<uint64_t> out;
  if (!f.has(key)) return out;
  if (!f.at(key).is_array()) throw config_invalid(f.file(), key, "is not a list");
  for (const json& l : f.at(key)) {
    if (!l.is_number_unsigned()) throw config_invalid(f.file(), key, fmt::format("{} is not a layer number", l.dump()));
    out.push_back(l.get<uint64_t>());
  }
  return out;
}

// DeepSeek-V2 and V3 as transformers 5 runs them: n_routed_experts of moe_intermediate_size,
// n_shared_experts as one ungated MLP of n_shared_experts * moe_intermediate_size, the first
// first_k_dense_replace layers dense, every later one sparse. What the original DeepSeek code read
// and transformers ignores (moe_layer_freq, scoring_func, V3's topk_method, V2's norm_topk_prob) is
// ignored alike.
MoeConfig read_deepseek_moe(const JsonFields& f, const Family& family) {
  const bool v3 = family.experts == Family::Experts::DeepseekV3;
  MoeConfig m;
  m.num_experts = f.uint("n_routed_experts", v3 ? 256 : 64);
  m.experts_per_token = v3 ? f.uint("num_experts_per_tok", 8) : f.uint("num_experts_per_tok");
  m.expert_intermediate_size = f.uint("moe_intermediate_size", v3 ? 2048 : 1407);
  const uint64_t shared = f.uint("n_shared_experts", v3 ? 1 : 2);
  if (m.expert_intermediate_size == 0) throw config_invalid(f.file(), "moe_intermediate_size", "must be positive");
  if (shared > (1u << 10)) throw config_invalid(f.file(), "n_shared_experts", "is above the supported maximum 1024");
  m.shared_expert_intermediate_size = shared * m.expert_intermediate_size;
  m.shared_expert_gated = false;
  m.first_dense_layers = f.uint("first_k_dense_replace", v3 ? 3 : 0);
  m.routed_scaling_factor = f.number("routed_scaling_factor", v3 ? 2.5 : 1.0);
  if (!(m.routed_scaling_factor > 0) || !std::isfinite(m.routed_scaling_factor))
    throw config_invalid(f.file(), "routed_scaling_factor", "must be a positive number");
  if (v3) {
    m.scoring = MoeConfig::Scoring::Sigmoid;
    m.score_correction_bias = true;
    m.norm_topk_prob = f.boolean("norm_topk_prob", true);
    m.groups = f.uint("n_group", 8);
    m.topk_groups = f.uint("topk_group", 4);
    m.group_by_top_two = true;
  } else {
    // transformers 5 runs these two methods only (it fails on another).
    const std::string method = f.string("topk_method", "greedy");
    if (method != "greedy" && method != "group_limited_greedy")
      throw config_invalid(f.file(), "topk_method", fmt::format("'{}' is not supported (greedy, group_limited_greedy)", method));
    m.norm_topk_prob = false;
    if (method == "group_limited_greedy") m.groups = f.uint("n_group"), m.topk_groups = f.uint("topk_group");
  }
  const char* count = "n_routed_experts";
  if (m.num_experts == 0) throw config_invalid(f.file(), count, "must be positive");
  if (m.groups == 0 || m.num_experts % m.groups != 0)
    throw config_invalid(f.file(), "n_group", fmt::format("{} does not divide n_routed_experts {}", m.groups, m.num_experts));
  if (m.group_by_top_two && m.num_experts / m.groups < 2)
    throw config_invalid(f.file(), "n_group", fmt::format("{} groups of {} experts: each group is scored by its best two", m.groups, m.num_experts / m.groups));
  if (m.topk_groups == 0 || m.topk_groups > m.groups)
    throw config_invalid(f.file(), "topk_group", fmt::format("{} is not in [1, n_group {}]", m.topk_groups, m.groups));
  const uint64_t eligible = m.topk_groups * (m.num_experts / m.groups);
  if (m.experts_per_token == 0 || m.experts_per_token > eligible)
    throw config_invalid(f.file(), "num_experts_per_tok",
                         fmt::format("{} is not in [1, {}] (the experts of topk_group of the n_group groups)", m.experts_per_token, eligible));
  return m;
}

// Mixtral's experts are intermediate_size wide: the caller sets that.
MoeConfig read_moe(const JsonFields& f, const Family& family) {
  if (family.experts == Family::Experts::DeepseekV2 || family.experts == Family::Experts::DeepseekV3) return read_deepseek_moe(f, family);
  MoeConfig m;
  const bool qwen = family.experts == Family::Experts::Qwen2Moe || family.experts == Family::Experts::Qwen3Moe;
  // Transformers 5 names Qwen3-MoE's expert count num_local_experts (4: num_experts).
  const char* count_key = family.experts == Family::Experts::Mixtral || family.experts == Family::Experts::GptOss ||
                                  family.experts == Family::Experts::Llama4 ||
                                  (family.experts == Family::Experts::Qwen3Moe && f.has("num_local_experts"))
                              ? "num_local_experts" : "num_experts";
  switch (family.experts) {
    case Family::Experts::None:
      for (const char* key : {"num_local_experts", "num_experts"})
        if (f.uint(key, 0) > 1) throw config_invalid(f.file(), key, fmt::format("{} models have no experts", family.model_type));
      return m;
    case Family::Experts::Mixtral:
      m.num_experts = f.uint(count_key, 8);
      m.experts_per_token = f.uint("num_experts_per_tok", 2);
      break;
    case Family::Experts::Qwen2Moe:
      m.num_experts = f.uint(count_key, 60);
      m.experts_per_token = f.uint("num_experts_per_tok", 4);
      m.expert_intermediate_size = f.uint("moe_intermediate_size", 1408);
      m.shared_expert_intermediate_size = f.uint("shared_expert_intermediate_size", 5632);
      break;
    case Family::Experts::DeepseekV2:
    case Family::Experts::DeepseekV3: break;  // read_deepseek_moe
    case Family::Experts::GptOss:  // of intermediate_size, as Mixtral's: the caller sets it
      m.num_experts = f.uint(count_key, 128);
      m.experts_per_token = f.uint("num_experts_per_tok", 4);
      m.stacks = MoeConfig::Stacks::Interleaved;
      m.swiglu_limit = f.number("swiglu_limit", 7.0);
      m.swiglu_alpha = f.number("swiglu_alpha", 1.702);
      for (const char* key : {"swiglu_limit", "swiglu_alpha"})
        if (!(f.number(key, 1.0) > 0) || !std::isfinite(f.number(key, 1.0))) throw config_invalid(f.file(), key, "must be a positive number");
      break;
    case Family::Experts::Llama4:  // of intermediate_size, as the shared expert: read_llama4_mlp sets both
      m.num_experts = f.uint(count_key, 16);
      m.experts_per_token = f.uint("num_experts_per_tok", 1);
      m.stacks = MoeConfig::Stacks::Halves;
      break;
    case Family::Experts::Qwen3Moe:
      if (f.has("num_local_experts") && f.has("num_experts") && f.uint("num_experts") != f.uint("num_local_experts"))
        throw config_invalid(f.file(), "num_experts", "disagrees with num_local_experts: transformers 4 reads the one, 5 the other");
      m.num_experts = f.uint(count_key, 128);
      m.experts_per_token = f.uint("num_experts_per_tok", 8);
      m.expert_intermediate_size = f.uint("moe_intermediate_size", 768);
      break;
  }
  if (family.shared_mlp) {  // Granite-MoE-Shared: 0 (its default) is no shared MLP
    m.shared_expert_intermediate_size = f.uint("shared_intermediate_size", 0);
    m.shared_expert_gated = false;
  }
  if (qwen) {
    m.norm_topk_prob = f.boolean("norm_topk_prob", false);
    m.decoder_sparse_step = f.uint("decoder_sparse_step", 1);
    m.mlp_only_layers = layer_list(f, "mlp_only_layers");
  }
  set_family_routing(family, m);
  if (m.num_experts == 0) throw config_invalid(f.file(), count_key, "must be positive");
  if (m.experts_per_token == 0 || m.experts_per_token > m.num_experts)
    throw config_invalid(f.file(), "num_experts_per_tok", fmt::format("{} is not in [1, {}]", m.experts_per_token, m.num_experts));
  if (qwen && m.expert_intermediate_size == 0) throw config_invalid(f.file(), "moe_intermediate_size", "must be positive");
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

// attention_bias gives q/k/v/o biases (Qwen2: q/k/v always; GLM-4 and Qwen2-MoE: q/k/v unless their
// field is false; Mistral, Mixtral, Phi-3: none, whatever it says); DeciLM as vLLM reads it: `bias`
// too, and qkv_bias overriding it for q/k/v. mlp_bias where the family reads it.
void read_biases(const JsonFields& f, const Family& family, LlamaConfig& c) {
  switch (family.biases) {
    case Family::Biases::None: break;
    case Family::Biases::QkvOnly: c.qkv_bias = true; break;
    case Family::Biases::QkvDefault: c.qkv_bias = f.boolean(std::string(family.qkv_bias_key).c_str(), true); break;
    case Family::Biases::Attention: c.qkv_bias = c.o_bias = f.boolean("attention_bias", family.attention_bias_default); break;
    case Family::Biases::DeciLm:
      c.o_bias = f.boolean("attention_bias", false) || f.boolean("bias", false);
      c.qkv_bias = f.boolean("qkv_bias", c.o_bias);
      break;
  }
  c.mlp_bias = family.mlp_bias && f.boolean("mlp_bias", false);
  // transformers' shared expert of no units (DeepSeek-V2's n_shared_experts 0) still adds its down_proj bias.
  if (c.mlp_bias && c.moe.num_experts && !c.moe.shared_expert_intermediate_size && !family.mlp.shared.empty())
    throw config_invalid(f.file(), "mlp_bias", "true with a shared expert of no units (whose output would be its bias) is not supported");
}

// Granite's multipliers; another family's are refused (it would run without them).
void read_multipliers(const JsonFields& f, const Family& family, LlamaConfig& c) {
  static constexpr const char* kKeys[] = {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"};
  if (!family.multipliers) {
    for (const char* key : kKeys)
      if (f.has(key)) throw config_invalid(f.file(), key, fmt::format("is a Granite field; {} models do not apply it", family.model_type));
    return;
  }
  c.embedding_multiplier = f.number("embedding_multiplier", 1.0);
  c.attention_multiplier = f.number("attention_multiplier", 1.0);
  c.residual_multiplier = f.number("residual_multiplier", 1.0);
  c.logits_scaling = f.number("logits_scaling", 1.0);
  for (const char* key : kKeys)
    if (!(f.number(key, 1.0) > 0) || !std::isfinite(f.number(key, 1.0))) throw config_invalid(f.file(), key, "must be a positive number");
}

// SmolLM3's no_rope_layers (1: the layer turns), or every no_rope_layer_interval-th layer without.
void read_rope_layers(const JsonFields& f, const Family& family, LlamaConfig& c) {
  if (!family.no_rope_layers) {
    if (f.has("no_rope_layers")) throw config_invalid(f.file(), "no_rope_layers", fmt::format("{} models turn every layer", family.model_type));
    return;
  }
  // Llama 4 reads an empty list as none given (Llama 4 Scout's config.json has one); SmolLM3 would fail on it.
  const bool listed = f.has("no_rope_layers") && !(family.llama4_attention && f.at("no_rope_layers").empty());
  if (listed) {
    const json& v = f.at("no_rope_layers");
    if (!v.is_array() || v.size() != c.num_layers)
      throw config_invalid(f.file(), "no_rope_layers", fmt::format("is not a list of {} flags (num_hidden_layers)", c.num_layers));
    for (const json& x : v) {
      if (x != 0 && x != 1) throw config_invalid(f.file(), "no_rope_layers", fmt::format("{} is not 0 or 1", x.dump()));
      c.rope_layers.push_back(x == 1);
    }
  } else {
    const uint64_t every = f.uint("no_rope_layer_interval", 4);
    if (every == 0) throw config_invalid(f.file(), "no_rope_layer_interval", "must be positive");
    for (uint64_t l = 0; l < c.num_layers; ++l) c.rope_layers.push_back((l + 1) % every != 0);
  }
  if (std::all_of(c.rope_layers.begin(), c.rope_layers.end(), [](bool turns) { return turns; })) c.rope_layers.clear();
}

// Llama 4's MLPs: experts in moe_layers (else every interleave_moe_layer_step-th layer), they and
// the shared expert intermediate_size wide, the other layers' MLP intermediate_size_mlp.
void read_llama4_mlp(const JsonFields& f, const Family& family, LlamaConfig& c) {
  if (family.experts != Family::Experts::Llama4) {
    for (const char* key : {"intermediate_size_mlp", "moe_layers", "interleave_moe_layer_step"})
      if (f.has(key)) throw config_invalid(f.file(), key, fmt::format("is a Llama 4 field; {} models do not apply it", family.model_type));
    return;
  }
  c.moe.expert_intermediate_size = c.moe.shared_expert_intermediate_size = c.intermediate_size;
  c.intermediate_size = f.uint("intermediate_size_mlp", 16384);
  std::vector<uint64_t> sparse;
  if (f.has("moe_layers")) {
    sparse = layer_list(f, "moe_layers");
  } else {
    const uint64_t step = f.uint("interleave_moe_layer_step", 1);
    if (step == 0) throw config_invalid(f.file(), "interleave_moe_layer_step", "must be positive");
    for (uint64_t l = step - 1; l < c.num_layers; l += step) sparse.push_back(l);
  }
  // The engine's rule (MoeConfig): every layer sparse but mlp_only_layers.
  for (uint64_t l = 0; l < c.num_layers; ++l)
    if (std::find(sparse.begin(), sparse.end(), l) == sparse.end()) c.moe.mlp_only_layers.push_back(l);
}

// Llama 4's attention (rope layers read): the q/k L2 norm, the chunked layers (layer_types; without
// it, those that turn) and the temperature tuning of the others.
void read_llama4_attention(const JsonFields& f, const Family& family, LlamaConfig& c) {
  if (!family.llama4_attention) {
    for (const char* key : {"use_qk_norm", "attention_chunk_size", "attn_temperature_tuning", "floor_scale", "attn_scale"})
      if (f.has(key)) throw config_invalid(f.file(), key, fmt::format("is a Llama 4 field; {} models do not apply it", family.model_type));
    return;
  }
  c.qk_l2_norm = f.boolean("use_qk_norm", true);
  if (f.has("layer_types")) {
    c.chunked_layers = layer_type_flags(f, c.num_layers, "chunked_attention");
  } else {
    for (uint64_t l = 0; l < c.num_layers; ++l) c.chunked_layers.push_back(c.rope_layer(l));
  }
  const bool chunked = std::find(c.chunked_layers.begin(), c.chunked_layers.end(), true) != c.chunked_layers.end();
  if (!chunked) c.chunked_layers.clear();
  if (chunked && f.is_null("attention_chunk_size"))
    throw config_invalid(f.file(), "attention_chunk_size", "is null but layer_types has chunked_attention layers (transformers refuses it too)");
  c.attention_chunk_size = chunked ? f.uint("attention_chunk_size", 8192) : 0;
  if (chunked && c.attention_chunk_size == 0) throw config_invalid(f.file(), "attention_chunk_size", "must be positive");
  if (f.boolean("attn_temperature_tuning", true)) {
    c.attn_floor_scale = f.uint("floor_scale", 8192);
    c.attn_scale = f.number("attn_scale", 0.1);
    if (c.attn_floor_scale == 0) throw config_invalid(f.file(), "floor_scale", "must be positive");
    if (!std::isfinite(c.attn_scale)) throw config_invalid(f.file(), "attn_scale", "must be a finite number");
  }
}

// DeepSeek's multi-head latent attention: its widths (head_dim becomes qk_rope_head_dim, as
// transformers sets it whatever config.json says) and its rotary layout. q_lora_rank null: q_proj.
void read_latent_attention(const JsonFields& f, const Family& family, LlamaConfig& c) {
  static constexpr const char* kKeys[] = {"kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "rope_interleave"};
  if (!family.latent_attention) {
    for (const char* key : kKeys)
      if (f.has(key)) throw config_invalid(f.file(), key, fmt::format("is a DeepSeek field; {} models do not apply it", family.model_type));
    return;
  }
  LatentAttention& a = c.mla;
  a.q_lora_rank = f.is_null("q_lora_rank") ? 0 : f.uint("q_lora_rank", 1536);
  a.kv_lora_rank = f.uint("kv_lora_rank", 512);
  a.qk_nope_head_dim = f.uint("qk_nope_head_dim", 128);
  a.qk_rope_head_dim = f.uint("qk_rope_head_dim", 64);
  a.v_head_dim = f.uint("v_head_dim", 128);
  // V2 always turns adjacent pairs (its complex rotation); V3 as rope_interleave says.
  a.interleaved_rope = family.experts != Family::Experts::DeepseekV3 || f.boolean("rope_interleave", true);
  if (f.has("q_lora_rank") && a.q_lora_rank == 0)
    throw config_invalid(f.file(), "q_lora_rank", "must be positive, or null for q_proj");
  for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
    if (f.uint(key, 1) == 0) throw config_invalid(f.file(), key, "must be positive");
  if (c.num_kv_heads != c.num_heads)
    throw config_invalid(f.file(), "num_key_value_heads",
                         fmt::format("{} differs from num_attention_heads {}: latent attention expands keys and values for every head", c.num_kv_heads, c.num_heads));
  c.head_dim = a.qk_rope_head_dim;
  c.prediction_layers = f.uint("num_nextn_predict_layers", 0);
}

// Flags the family's transformers code reads that the engine runs only false (Family::unsupported_flags).
void refuse_unsupported_flags(const JsonFields& f, const Family& family) {
  for (const std::string_view flag : family.unsupported_flags)
    if (f.boolean(std::string(flag).c_str(), false))
      throw config_invalid(f.file(), std::string(flag), fmt::format("true is not supported (the engine runs {} models without it)", family.model_type));
}

// DeciLM's rotary layouts other than rotate-half (vLLM turns these two with Meta's interleaved pairs).
void refuse_interleaved_rotary(const JsonFields& f, const Family& family) {
  const std::string position = family.decilm ? f.string("position_embedding_type") : "";
  if (position == "mistral_yarn" || position == "rope_llama4")
    throw config_invalid(f.file(), "position_embedding_type", fmt::format("'{}' is not supported", position));
}

// A multimodal model's language model (Family::multimodal): its text_config, read as the family's
// own config.json. The outer tie_word_embeddings, where given, is the one transformers follows.
std::optional<json> language_model_config(const JsonFields& outer) {
  const Family* family = family_by_multimodal_type(outer.string("model_type"));
  if (!family) return std::nullopt;
  const std::string_view wrapper = family->multimodal.model_type;
  if (!outer.has("text_config") || !outer.at("text_config").is_object())
    throw config_invalid(outer.file(), "text_config",
                         fmt::format("missing or not an object: a {} config keeps its language model's fields there", wrapper));
  json text = outer.at("text_config");
  const std::string type = JsonFields(text, outer.file()).string("model_type", std::string(family->model_type));
  if (type != family->model_type)
    throw config_invalid(outer.file(), "text_config.model_type",
                         fmt::format("'{}': a {} model's language model is a {}", type, wrapper, family->model_type));
  text["model_type"] = family->model_type;
  text.erase("architectures");
  if (outer.has("tie_word_embeddings")) text["tie_word_embeddings"] = outer.at("tie_word_embeddings");
  return text;
}

}  // namespace

LlamaConfig llama_config_from_hf_json(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "config.json is not a JSON object", file);
  const std::optional<json> language_model = language_model_config(JsonFields(doc, file));
  const JsonFields f(language_model ? *language_model : doc, file);
  const Family& family = family_of(f);
  const std::string type(family.model_type);
  LlamaConfig c;
  c.origin = "config.json";
  c.architecture = type;
  if (language_model) c.multimodal = family.multimodal.model_type;
  c.hidden_act = activation(f, family);
  // What the engine may refuse first, then the sizes.
  const Ropes ropes = read_ropes(f, family);
  read_windows(f, family, c);
  read_gemma(f, family, c);
  refuse_interleaved_rotary(f, family);
  refuse_unsupported_flags(f, family);
  c.moe = read_moe(f, family);
  c.eos_token_ids = token_ids(f, "eos_token_id");
  c.hidden_size = f.uint("hidden_size");
  c.num_layers = f.uint("num_hidden_layers");
  c.num_heads = f.uint("num_attention_heads");
  read_layer_widths(f, type, c);
  if (family.experts == Family::Experts::Mixtral || family.experts == Family::Experts::GptOss) c.moe.expert_intermediate_size = c.intermediate_size;
  c.attention_sinks = family.attention_sinks;
  c.head_dim = f.uint("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  read_latent_attention(f, family, c);
  c.vocab_size = f.uint("vocab_size", 0);
  c.max_position_embeddings = f.uint("max_position_embeddings", 2048);
  c.rms_norm_eps = f.number("rms_norm_eps", family.rms_norm_eps_default ? family.rms_norm_eps_default : 1e-6);
  c.qk_norm = family.qk_norm;
  c.qk_norm_whole = family.qk_norm_whole;
  c.post_norms_only = family.post_norms_only;
  c.glm_norms = family.glm_norms;
  if (family.glm_norms) c.sandwich_norms = true;
  c.rope_adjacent_pairs = family.rope_adjacent_pairs;
  read_rope_layers(f, family, c);
  read_listed_windows(f, family, c);
  follow_layer_types(f, family, c);
  apply_ropes(f, ropes, c);
  if (c.latent_attention()) c.mla.softmax_scale = c.mla.scaled_softmax(c.rope_scaling);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", family.tied_by_default);
  read_multipliers(f, family, c);
  read_llama4_mlp(f, family, c);
  read_llama4_attention(f, family, c);
  read_biases(f, family, c);
  return c;
}

std::vector<int32_t> eos_ids_from_generation_config(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error(ErrorCode::ConfigInvalid, "generation_config.json is not a JSON object", file);
  return token_ids(JsonFields(doc, file), "eos_token_id");
}

}  // namespace wl
