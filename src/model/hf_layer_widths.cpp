#include "model/hf_layer_widths.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "families/family.hpp"

namespace wl {

namespace {

using nlohmann::json;

// A list of one positive integer per layer.
std::vector<uint64_t> per_layer_list(const JsonFields& f, const char* key, uint64_t layers) {
  const json& v = f.at(key);
  if (!v.is_array() || v.size() != layers)
    throw config_invalid(f.file(), key, fmt::format("{} is not a list of num_hidden_layers ({}) entries", v.is_array() ? fmt::format("a list of {}", v.size()) : v.dump(), layers));
  std::vector<uint64_t> out;
  for (const json& x : v) {
    if (!x.is_number_unsigned() || x.get<uint64_t>() == 0) throw config_invalid(f.file(), key, fmt::format("{} is not a positive integer", x.dump()));
    out.push_back(x.get<uint64_t>());
  }
  return out;
}

// transformers' and vLLM's _ffn_mult_to_intermediate_size: int(2 * ffn_mult * n_embd / 3), rounded
// up to a multiple of 256 (the same double operations in the same order as the Python).
uint64_t ffn_mult_to_intermediate_size(double ffn_mult, uint64_t hidden) {
  const uint64_t n = uint64_t(2 * ffn_mult * double(hidden) / 3);
  return n % 256 == 0 ? n : n + 256 - n % 256;
}

// Layer l's sub-block `kind` ("attention", "ffn") with its keys spelled out in full
// ("block_configs[3].ffn.ffn_mult"), so that JsonFields' errors name the layer. A key outside `read`
// is refused unless null or false: what it turns on (replace_with_linear, sinks, windows, sparsity,
// Mamba, ...) the engine does not run.
json sub_block(const json& entry, uint64_t l, const char* kind, const std::set<std::string>& read, const std::string& file) {
  const std::string at = fmt::format("block_configs[{}].{}", l, kind);
  if (!entry.is_object() || !entry.contains(kind) || !entry[kind].is_object()) throw config_invalid(file, at, "is missing or not an object");
  json out = json::object();
  for (const auto& [key, value] : entry[kind].items()) {
    if (!read.count(key) && !value.is_null() && value != false)
      throw config_invalid(file, at + "." + key, fmt::format("{} is not supported (only null or false)", value.dump()));
    out[at + "." + key] = value;
  }
  return out;
}

uint64_t ffn_width(const JsonFields& m, const std::string& at, const LlamaConfig& c) {
  const std::string act = at + "hidden_act", gated = at + "gated", mult = at + "ffn_mult", width = at + "intermediate_size";
  if (m.string(act.c_str(), c.hidden_act) != c.hidden_act)
    throw config_invalid(m.file(), act, fmt::format("'{}' differs from hidden_act '{}'; one activation for all layers", m.string(act.c_str()), c.hidden_act));
  if (!m.boolean(gated.c_str(), true)) throw config_invalid(m.file(), gated, "non-gated MLPs are not supported");
  if (!m.has(mult.c_str())) return m.uint(width.c_str());  // vLLM's other spelling; missing: an error naming it
  const double v = m.number(mult.c_str(), 0);
  if (!(v > 0) || !(2 * v * double(c.hidden_size) / 3 < double(1ull << 40)))
    throw config_invalid(m.file(), mult, fmt::format("{} is not a positive multiplier of a supported width", v));
  return ffn_mult_to_intermediate_size(v, c.hidden_size);
}

LayerWidths block_widths(const json& entry, uint64_t l, const LlamaConfig& c, const std::string& file) {
  const json attention = sub_block(entry, l, "attention", {"no_op", "n_heads_in_group"}, file);
  const json ffn = sub_block(entry, l, "ffn", {"no_op", "ffn_mult", "intermediate_size", "hidden_act", "gated"}, file);
  const JsonFields a(attention, file), m(ffn, file);
  const std::string at_a = fmt::format("block_configs[{}].attention.", l), at_m = fmt::format("block_configs[{}].ffn.", l);
  LayerWidths w;
  if (!a.boolean((at_a + "no_op").c_str(), false)) {
    const std::string key = at_a + "n_heads_in_group";
    const uint64_t group = a.uint(key.c_str());
    if (group == 0 || c.num_heads % group != 0)
      throw config_invalid(file, key, fmt::format("{} does not divide num_attention_heads {}", group, c.num_heads));
    w.num_kv_heads = c.num_heads / group;
  }
  if (!m.boolean((at_m + "no_op").c_str(), false)) {
    w.intermediate_size = ffn_width(m, at_m, c);
    if (w.intermediate_size == 0) throw config_invalid(file, at_m + "intermediate_size", "must be positive");
  }
  return w;
}

std::vector<LayerWidths> block_configs(const JsonFields& f, const LlamaConfig& c) {
  const json& v = f.at("block_configs");
  if (!v.is_array() || v.size() != c.num_layers)
    throw config_invalid(f.file(), "block_configs", fmt::format("is not a list of num_hidden_layers ({}) entries", c.num_layers));
  std::vector<LayerWidths> out;
  for (uint64_t l = 0; l < c.num_layers; ++l) out.push_back(block_widths(v[l], l, c, f.file()));
  return out;
}

// From the lists that are given, the rest uniform. Each layer's kv heads must divide the query heads.
std::vector<LayerWidths> listed_widths(const JsonFields& f, const std::string& type, const LlamaConfig& c) {
  const bool ff_list = f.has("intermediate_size") && f.at("intermediate_size").is_array();
  const bool kv_list = decilm_family(type) && f.has("num_key_value_heads_per_layer");
  const uint64_t kv = f.uint("num_key_value_heads", c.num_heads);
  // Uniform widths are one entry: num_hidden_layers is untrusted, only a list's own length sizes memory.
  if (!ff_list && !kv_list) return {LayerWidths{f.uint("intermediate_size"), kv}};
  const std::vector<uint64_t> ff = ff_list ? per_layer_list(f, "intermediate_size", c.num_layers) : std::vector<uint64_t>{};
  const std::vector<uint64_t> kvs = kv_list ? per_layer_list(f, "num_key_value_heads_per_layer", c.num_layers) : std::vector<uint64_t>{};
  const uint64_t uniform_ff = ff_list ? 0 : f.uint("intermediate_size");
  std::vector<LayerWidths> out;
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    if (kv_list && c.num_heads % kvs[l] != 0)
      throw config_invalid(f.file(), "num_key_value_heads_per_layer", fmt::format("layer {}'s {} does not divide num_attention_heads {}", l, kvs[l], c.num_heads));
    out.push_back(LayerWidths{ff_list ? ff[l] : uniform_ff, kv_list ? kvs[l] : kv});
  }
  return out;
}

}  // namespace

bool decilm_family(const std::string& type) {
  const Family* family = family_by_type(type);
  return family && family->decilm;
}

void read_layer_widths(const JsonFields& f, const std::string& type, LlamaConfig& c) {
  const bool blocks = decilm_family(type) && f.has("block_configs");
  if (c.moe.num_experts && f.has("intermediate_size") && f.at("intermediate_size").is_array())
    throw config_invalid(f.file(), "intermediate_size", "per-layer widths are for dense models; this one has experts");
  std::vector<LayerWidths> layers = blocks ? block_configs(f, c) : listed_widths(f, type, c);
  c.intermediate_size = c.num_kv_heads = 0;
  for (const LayerWidths& w : layers) {
    c.intermediate_size = std::max(c.intermediate_size, w.intermediate_size);
    c.num_kv_heads = std::max(c.num_kv_heads, w.num_kv_heads);
  }
  const LayerWidths widest{c.intermediate_size, c.num_kv_heads};
  if (std::any_of(layers.begin(), layers.end(), [&](const LayerWidths& w) { return w != widest; })) c.layer_widths = std::move(layers);
}

json block_configs_json(const LlamaConfig& c) {
  json out = json::array();
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const uint64_t kv = c.layer_kv_heads(l), ff = c.layer_intermediate_size(l);
    json attention = json::object({{"no_op", kv == 0}}), ffn = json::object({{"no_op", ff == 0}});
    if (kv) attention["n_heads_in_group"] = c.num_heads / kv;
    if (ff) ffn["intermediate_size"] = ff;
    out.push_back(json::object({{"attention", std::move(attention)}, {"ffn", std::move(ffn)}}));
  }
  return out;
}

}  // namespace wl
