// The fields of a model description that change its math, and how each reads as text.
#include "convert/model_fields.hpp"

#include <functional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {

// A field of the model, as text.
struct Field {
  const char* name;
  std::function<std::string(const LlamaConfig&)> value;
};

// "4 on every layer", "none", or the window of each layer (0: none). A window no shorter than
// the context masks nothing: none.
std::string windows(const LlamaConfig& c) {
  auto window = [&](uint64_t l) { return c.window_layer(l) < c.max_position_embeddings ? c.window_layer(l) : 0; };
  std::string each;
  bool same = true;
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    each += fmt::format("{}{}", l ? "," : "", window(l));
    same = same && window(l) == window(0);
  }
  if (!same) return fmt::format("[{}] per layer", each);
  return window(0) ? fmt::format("{} on every layer", window(0)) : "none";
}

// "uniform", or each layer's intermediate size and kv heads (0: a skipped sub-block).
std::string layer_widths(const LlamaConfig& c) {
  std::string each;
  for (const LayerWidths& w : c.layer_widths) each += fmt::format("{}{}/{}", each.empty() ? "" : ",", w.intermediate_size, w.num_kv_heads);
  return each.empty() ? "uniform" : fmt::format("[{}] per layer", each);
}

// Floats as the file stores them (F32).
std::string f32(double v) { return fmt::format("{}", float(v)); }

// The layers a rule holds for: "every layer", "none", or their list.
std::string layers_where(const LlamaConfig& c, const std::function<bool(uint64_t)>& holds) {
  std::vector<uint64_t> where;
  for (uint64_t l = 0; l < c.num_layers; ++l)
    if (holds(l)) where.push_back(l);
  if (where.empty()) return "none";
  return where.size() == c.num_layers ? "every layer" : fmt::format("layers [{}]", fmt::join(where, ","));
}

const std::vector<Field>& fields() {
  static const std::vector<Field> all{
      {"hidden_size", [](const LlamaConfig& c) { return std::to_string(c.hidden_size); }},
      {"intermediate_size", [](const LlamaConfig& c) { return std::to_string(c.intermediate_size); }},
      {"num_hidden_layers", [](const LlamaConfig& c) { return std::to_string(c.num_layers); }},
      {"num_attention_heads", [](const LlamaConfig& c) { return std::to_string(c.num_heads); }},
      {"num_key_value_heads", [](const LlamaConfig& c) { return std::to_string(c.num_kv_heads); }},
      {"per-layer intermediate_size/kv heads", layer_widths},
      {"head_dim", [](const LlamaConfig& c) { return std::to_string(c.head_dim); }},
      {"rotary dimensions", [](const LlamaConfig& c) { return std::to_string(c.rotary_dims()); }},
      {"rms_norm_eps", [](const LlamaConfig& c) { return f32(c.rms_norm_eps); }},
      {"rope_theta", [](const LlamaConfig& c) { return f32(c.rope_theta); }},
      {"rope_scaling", [](const LlamaConfig& c) {
         const RopeScaling& r = c.rope_scaling;
         if (r.type.empty()) return std::string("none");
         if (r.type != "yarn") return r.type;
         return fmt::format("yarn x{} from {}, beta_fast {}, beta_slow {}{}, cos/sin x{}, mscale_all_dim {}", f32(r.factor),
                            r.original_max_position_embeddings, f32(r.beta_fast), f32(r.beta_slow), r.truncate ? "" : " (not truncated)",
                            f32(r.attention_factor), f32(r.mscale_all_dim));
       }},
      {"sliding layers' rope_theta/rope_scaling",
       [](const LlamaConfig& c) {
         const std::string& type = c.sliding_rope_scaling.type;
         return c.sliding_rope_theta ? fmt::format("{}/{}", f32(c.sliding_rope_theta), type.empty() ? "none" : type) : std::string("those of every layer");
       }},
      {"hidden_act", [](const LlamaConfig& c) { return c.hidden_act; }},
      {"sliding_window", windows},
      {"attn_logit_softcapping", [](const LlamaConfig& c) { return f32(c.attn_logit_softcapping); }},
      {"final_logit_softcapping", [](const LlamaConfig& c) { return f32(c.final_logit_softcapping); }},
      {"query_pre_attn_scalar",
       [](const LlamaConfig& c) { return f32(c.query_pre_attn_scalar ? c.query_pre_attn_scalar : double(c.head_dim)); }},
      {"(1+w) norms", [](const LlamaConfig& c) { return c.norm_weight_offset ? "yes" : "no"; }},
      {"scaled embeddings", [](const LlamaConfig& c) { return c.scale_embeddings ? "yes" : "no"; }},
      {"four norms per block", [](const LlamaConfig& c) { return c.sandwich_norms ? "yes" : "no"; }},
      {"rotary pairs", [](const LlamaConfig& c) { return c.rope_adjacent_pairs ? "adjacent" : "halves"; }},
      {"experts", [](const LlamaConfig& c) {
         const MoeConfig& m = c.moe;
         if (!m.num_experts) return std::string("none");
         std::string s = fmt::format("{} of {} units, top-{}{}", m.num_experts, m.expert_intermediate_size, m.experts_per_token,
                                     m.norm_topk_prob ? " renormalised" : "");
         if (m.shared_expert_intermediate_size) s += fmt::format(", a shared expert of {} units", m.shared_expert_intermediate_size);
         if (m.decoder_sparse_step != 1 || !m.mlp_only_layers.empty()) s += ", dense layers between";
         if (m.first_dense_layers) s += fmt::format(", the first {} layers dense", m.first_dense_layers);
         if (m.scoring == MoeConfig::Scoring::Sigmoid) s += m.score_correction_bias ? ", sigmoid scores with a choosing bias" : ", sigmoid scores";
         if (m.topk_groups < m.groups)  // all groups eligible: no restriction
           s += fmt::format(", chosen among the best {} of {} groups by their best {}", m.topk_groups, m.groups,
                            m.group_by_top_two ? "two" : "expert");
         if (m.routed_scaling_factor != 1) s += fmt::format(", weights times {}", f32(m.routed_scaling_factor));
         if (m.shared_expert_intermediate_size && !m.shared_expert_gated) s += ", the shared expert ungated";
         if (m.clamped_swiglu()) s += fmt::format(", clamped SwiGLU (limit {}, alpha {})", f32(m.swiglu_limit), f32(m.swiglu_alpha));
         if (m.router_bias || m.weight_input) s += fmt::format(", routed as {}", c.architecture);
         return s;
       }},
      {"sparse layers", [](const LlamaConfig& c) { return layers_where(c, [&](uint64_t l) { return c.moe_layer(l); }); }},
      {"layers without rope", [](const LlamaConfig& c) { return layers_where(c, [&](uint64_t l) { return !c.rope_layer(l); }); }},
      {"attention sinks", [](const LlamaConfig& c) { return c.attention_sinks ? "yes" : "no"; }},
      {"q/k L2 norm", [](const LlamaConfig& c) { return c.qk_l2_norm ? "yes" : "no"; }},
      {"chunked attention", [](const LlamaConfig& c) {
         return c.attention_chunk_size ? fmt::format("{} on {}", c.attention_chunk_size, layers_where(c, [&](uint64_t l) { return c.chunk_layer(l) != 0; }))
                                       : std::string("none");
       }},
      {"attention temperature tuning", [](const LlamaConfig& c) {
         return c.attn_floor_scale ? fmt::format("floor_scale {}, attn_scale {}", c.attn_floor_scale, f32(c.attn_scale)) : std::string("none");
       }},
      {"latent attention", [](const LlamaConfig& c) {
         const LatentAttention& a = c.mla;
         return c.latent_attention() ? fmt::format("q_lora_rank {}, kv_lora_rank {}, nope/rope/v {}/{}/{}, {} pairs, softmax scale {}",
                                                   a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim,
                                                   a.v_head_dim, a.interleaved_rope ? "adjacent" : "half-split", f32(a.softmax_scale))
                                     : std::string("none");
       }},
  };
  return all;
}

}  // namespace

void refuse_model_change(const LlamaConfig& source, const LlamaConfig& read, const std::string& target,
                         const std::string& origin) {
  for (const Field& f : fields()) {
    const std::string want = f.value(source), got = f.value(read);
    if (want != got)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("this {} cannot be written as {}: that would run it with {} {} instead of {}",
                              source.architecture, target, f.name, got, want),
                  origin);
  }
}

LlamaConfig as_llama2c_runs(const LlamaConfig& c) {
  LlamaConfig r;
  r.architecture = "llama";
  r.hidden_size = c.hidden_size;
  r.intermediate_size = c.intermediate_size;
  r.num_layers = c.num_layers;
  r.num_heads = c.num_heads;
  r.num_kv_heads = c.num_kv_heads;
  r.head_dim = r.rotary_dim = c.num_heads ? c.hidden_size / c.num_heads : 0;
  r.vocab_size = c.vocab_size;
  r.max_position_embeddings = c.max_position_embeddings;
  return r;  // run.c's eps 1e-5 and theta 10000: LlamaConfig's defaults
}

}  // namespace wl
