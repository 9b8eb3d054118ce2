// GGUF keys into the model description, per architecture as llama.cpp's llama-model.cpp reads them
// (at c392e509): the keys each family lists (src/families/), with llama.cpp's defaults.
#include "model/gguf_config.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "families/family.hpp"
#include "model/config_fields.hpp"
#include "model/family_routing.hpp"
#include "model/gguf_quantities.hpp"

namespace wl {

namespace {

// llama.cpp's architectures that some family is written as, in the order the families are listed.
std::string gguf_architecture_names() {
  std::vector<std::string_view> names;
  for (const Family* f : families())
    if (!f->gguf.name.empty() && std::find(names.begin(), names.end(), f->gguf.name) == names.end()) names.push_back(f->gguf.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// A key's value as its quantity (a bool as 0 or 1); `absent` when the file leaves it out.
double read_value(const MetadataFields& m, const std::string& key, GgufStored stored, std::optional<double> absent) {
  switch (stored) {
    case GgufStored::UInt32: return double(m.uint(key, absent ? std::optional<uint64_t>(uint64_t(*absent)) : std::nullopt));
    case GgufStored::Float32: return m.number(key, absent);
    case GgufStored::Bool: break;
  }
  if (!m.has(key) && absent) return *absent;
  const std::string text = m.string(key);
  if (text != "true" && text != "false")
    throw config_invalid(m.file(), key, m.has(key) ? fmt::format("'{}' is not true or false", text) : std::string("missing"));
  return text == "true";
}

// Each of the architecture's keys (src/families/) into its quantity, llama.cpp's default when absent.
void read_keys(const MetadataFields& m, const std::string& a, const GgufArchitecture& arch, LlamaConfig& c) {
  for (const GgufKey& k : gguf_keys(arch)) {
    const std::string key = a + std::string(k.suffix);
    const std::optional<double> absent = gguf_absent_value(k, c);
    const double v = read_value(m, key, gguf_quantity_stored(k.quantity), absent);
    if (!k.absent_only) set_gguf_quantity(c, k.quantity, v);
    else if (v != *absent)
      throw config_invalid(m.file(), key, fmt::format("{} is not supported: the engine runs only {} here", v, *absent));
  }
}

// rope.scaling.type: none, or yarn where llama.cpp runs it (GgufArchitecture::yarn): its factor and
// original context from the file, llama.cpp's default bands rounded outwards, cos and sin unscaled
// or scaled by 0.1 ln(factor) + 1 (1 for a factor of at most 1, as transformers' get_mscale).
void read_rope_scaling(const MetadataFields& m, const std::string& a, const GgufArchitecture& g, LlamaConfig& c) {
  const std::string type = m.has(a + "rope.scaling.type") ? m.string(a + "rope.scaling.type") : "none";
  if (type == "none") return;
  const bool yarn = g.yarn != GgufArchitecture::Yarn::None;
  if (type != "yarn" || !yarn)
    throw config_invalid(m.file(), a + "rope.scaling.type", fmt::format("'{}' is not supported{}", type, yarn ? " (only yarn)" : ""));
  RopeScaling& r = c.rope_scaling;
  r.type = "yarn";
  r.factor = m.number(a + "rope.scaling.factor");
  r.original_max_position_embeddings = m.uint(a + "rope.scaling.original_context_length");
  if (!(r.factor > 0) || r.original_max_position_embeddings == 0)
    throw config_invalid(m.file(), a + "rope.scaling.factor", "yarn needs a positive factor and original_context_length");
  if (g.yarn == GgufArchitecture::Yarn::Scaled && r.factor > 1) r.attention_factor = 0.1 * std::log(r.factor) + 1.0;
}

// Latent attention (llama.cpp's deepseek2): key_length is the query/key width, nope + rope, of which
// rope.dimension_count turns, in adjacent pairs; the scores scale by 1/sqrt(key_length), times
// yarn's mscale squared (yarn_log_multiplier's). Other attention: values as wide as keys.
void read_attention_widths(const MetadataFields& m, const std::string& a, const Family& family, LlamaConfig& c) {
  LatentAttention& mla = c.mla;
  if (!family.latent_attention) {
    if (mla.v_head_dim != c.head_dim)
      throw config_invalid(m.file(), a + "attention.value_length",
                           fmt::format("{} differs from the key length {}: the engine's values are as wide as its keys", mla.v_head_dim, c.head_dim));
    mla = {};
    return;
  }
  if (c.num_layers == family.gguf.q_proj_layers) mla.q_lora_rank = 0;  // llama.cpp does not read the key
  else if (mla.q_lora_rank == 0)
    throw config_invalid(m.file(), a + "attention.q_lora_rank",
                         fmt::format("0 is not supported: llama.cpp reads queries through q_proj only in models of {} layers, "
                                     "through q_a/q_b in the others", family.gguf.q_proj_layers));
  if (c.rotary_dims() >= c.head_dim)
    throw config_invalid(m.file(), a + "rope.dimension_count",
                         fmt::format("{} leaves no dimension of the key length {} that does not turn", c.rotary_dims(), c.head_dim));
  mla.qk_rope_head_dim = c.rotary_dims();
  mla.qk_nope_head_dim = c.head_dim - mla.qk_rope_head_dim;
  mla.interleaved_rope = true;
  mla.softmax_scale = mla.scaled_softmax(c.rope_scaling);
  c.head_dim = mla.qk_rope_head_dim;
  c.rotary_dim = 0;
}

// Llama 4 as llama.cpp runs it: each no_rope_every-th layer without rope and global, its queries'
// temperature tuned, the others chunked, their q and k L2-normalised (but with unnormed_experts).
void read_llama4_attention(const GgufArchitecture& g, LlamaConfig& c) {
  for (uint64_t l = 0; g.no_rope_every && l < c.num_layers; ++l) c.rope_layers.push_back((l + 1) % g.no_rope_every != 0);
  if (std::find(c.rope_layers.begin(), c.rope_layers.end(), false) == c.rope_layers.end()) c.rope_layers.clear();  // all turn
  for (uint64_t l = 0; g.chunk && l < c.num_layers; ++l) c.chunked_layers.push_back((l + 1) % g.global_every != 0);
  c.attention_chunk_size = g.chunk;
  c.attn_floor_scale = g.temperature_floor_scale;
  c.attn_scale = g.temperature_scale;
  c.qk_l2_norm = c.moe.num_experts != g.unnormed_experts;
}

// What the architecture itself fixes (biases are the tensors there are, as llama.cpp loads them):
// the family's norms, activations, scales and experts' routing, and llama.cpp's own rules for its
// windows, query scale and experts' weights.
void read_family(const Family& family, LlamaConfig& c) {
  const GgufArchitecture& g = family.gguf;
  c.qk_norm = family.qk_norm;
  c.qk_norm_whole = family.qk_norm_whole;
  c.post_norms_only = family.post_norms_only;
  c.glm_norms = family.glm_norms;
  c.rope_adjacent_pairs = family.rope_adjacent_pairs;
  if (family.gemma_norms) {
    c.hidden_act = "gelu_pytorch_tanh";
    c.norm_weight_offset = c.scale_embeddings = true;
  }
  if (family.gemma2 || family.glm_norms) c.sandwich_norms = true;
  if (family.gemma2) c.query_pre_attn_scalar = double(c.num_layers == g.hidden_query_scale_layers ? c.hidden_size / c.num_heads : c.head_dim);
  c.attention_sinks = family.attention_sinks;
  if (family.window == Family::Window::EveryOther) c.sliding_window_every = 2;
  for (uint64_t l = 0; g.global_every && !g.chunk && l < c.num_layers; ++l) c.sliding_layers.push_back((l + 1) % g.global_every != 0);
  if (family.llama4_attention) read_llama4_attention(g, c);
  if (c.moe.num_experts) set_family_routing(family, c.moe);
  c.moe.swiglu_limit = g.swiglu_limit, c.moe.swiglu_alpha = g.swiglu_alpha;
  if (c.moe.num_experts && !family.latent_attention) c.moe.norm_topk_prob = g.renormalises_top_k;
  if (family.shared_mlp) c.moe.shared_expert_gated = false;  // Granite-MoE-Shared's shared MLP adds as it is
  if (family.latent_attention) {
    c.moe.shared_expert_gated = false;  // DeepSeek's shared experts add as they are
    // llama.cpp's converter writes exp_probs_b (e_score_correction_bias) for every sigmoid-scored
    // deepseek2 (V3), and llama.cpp chooses by it when there.
    c.moe.score_correction_bias = c.moe.scoring == MoeConfig::Scoring::Sigmoid;
  }
}

}  // namespace

LlamaConfig llama_config_from_gguf(const std::map<std::string, std::string>& metadata, const std::string& file) {
  const MetadataFields m(metadata, file);
  const std::string arch = m.string("general.architecture");
  const std::string a = arch + ".";
  // A shared MLP's width (beside experts) tells Granite-MoE-Shared from Granite-MoE.
  const Family* family = family_by_gguf_architecture(arch, m.uint(a + "expert_count", 0) > 0,
                                                     m.uint(a + "expert_shared_feed_forward_length", 0) > 0);
  if (!family)
    throw config_invalid(file, "general.architecture",
                         fmt::format("'{}' is not an architecture the engine runs ({})", arch, gguf_architecture_names()));
  LlamaConfig c;
  c.origin = "gguf";
  c.architecture = std::string(family->model_type);
  read_keys(m, a, family->gguf, c);
  read_rope_scaling(m, a, family->gguf, c);
  if (m.has("tokenizer.ggml.eos_token_id")) c.eos_token_ids = {int32_t(m.uint("tokenizer.ggml.eos_token_id"))};
  read_attention_widths(m, a, *family, c);
  read_family(*family, c);
  return c;
}

}  // namespace wl
