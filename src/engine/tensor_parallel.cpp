#include "engine/tensor_parallel.hpp"

#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "families/family.hpp"
#include "loaders/rank_shards.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// Rank `rank`'s range of `units` MLP units: whole quantisation blocks (256 for K-quants, 32 for
// the others) when the size allows, so row-parallel down_proj columns of a quantised GGUF file
// stay readable.
std::pair<uint64_t, uint64_t> unit_range(uint64_t units, unsigned rank, unsigned size) {
  uint64_t granule = 1;
  for (uint64_t g : {256u, 32u})
    if (units % g == 0 && units / g >= size) {
      granule = g;
      break;
    }
  const uint64_t blocks = units / granule;
  const uint64_t begin = granule * (blocks * rank / size);
  return {begin, granule * (blocks * (rank + 1) / size) - begin};
}

ParameterShard rows(std::string from, uint64_t begin, uint64_t count, uint64_t at) {
  return ParameterShard{std::move(from), Slice{0, begin, begin + count}, at};
}

ParameterShard columns(std::string from, uint64_t begin, uint64_t count) {
  return ParameterShard{std::move(from), Slice{1, begin, begin + count}, 0};
}

// An MLP's gate_up_proj (gate rows then up rows of units [ff0, ff0 + ff) of `units`) and down_proj.
// `gate`/`up`/`down` name the checkpoint's tensors; a fused checkpoint's gate_up holds gate then up.
struct MlpTensors {
  std::string gate, up, down, fused;  // fused: non-empty when the checkpoint stores gate_up_proj
};

void declare_mlp(Model& m, const std::string& at, const MlpTensors& from, uint64_t units, uint64_t ff0, uint64_t ff,
                 uint64_t D, DType dtype, bool bias, bool rank0) {
  for (const char* kind : {"weight", "bias"}) {
    const bool is_bias = std::string(kind) == "bias";
    if (is_bias && !bias) continue;
    const Shape shape = is_bias ? Shape{2 * ff} : Shape{2 * ff, D};
    std::vector<ParameterShard> parts;
    if (!from.fused.empty())
      parts = {rows(from.fused + "." + kind, ff0, ff, 0), rows(from.fused + "." + kind, units + ff0, ff, ff)};
    else
      parts = {rows(from.gate + "." + kind, ff0, ff, 0), rows(from.up + "." + kind, ff0, ff, ff)};
    m.add_parameter(at + "gate_up_proj." + kind, shape, is_bias ? DType::F32 : dtype, std::move(parts));
  }
  m.add_parameter(at + "down_proj.weight", {D, ff}, dtype, {columns(from.down + ".weight", ff0, ff)});
  if (bias && rank0) m.add_parameter(at + "down_proj.bias", {D}, DType::F32);
}

void declare_attention(Model& m, const LlamaConfig& c, const RankPartition& p, uint64_t l, const std::string& attn, DType dtype) {
  const uint64_t D = c.hidden_size, hd = c.head_dim;
  const LayerPartition& lp = p.layers[l];
  const uint64_t q_rows = p.q_heads * hd, kv_rows = lp.kv_heads * hd, kv_dim = c.layer_kv_heads(l) * hd;
  for (const char* kind : {"weight", "bias"}) {
    const bool bias = std::string(kind) == "bias";
    if (bias && !c.qkv_bias) continue;
    const Shape shape = bias ? Shape{q_rows + 2 * kv_rows} : Shape{q_rows + 2 * kv_rows, D};
    // A fused checkpoint's qkv_proj holds all q rows, then all k rows, then all v rows.
    const std::string fused = attn + "qkv_proj." + kind;
    auto from = [&](const char* split) { return c.fused_checkpoint ? fused : attn + split + "." + kind; };
    const uint64_t k_at = c.fused_checkpoint ? c.q_dim() : 0, v_at = c.fused_checkpoint ? c.q_dim() + kv_dim : 0;
    m.add_parameter(fused, shape, bias ? DType::F32 : dtype,
                    {rows(from("q_proj"), p.q_head0 * hd, q_rows, 0), rows(from("k_proj"), k_at + lp.kv_head0 * hd, kv_rows, q_rows),
                     rows(from("v_proj"), v_at + lp.kv_head0 * hd, kv_rows, q_rows + kv_rows)});
  }
  if (c.qk_norm)  // one weight per head dimension, the same for every head: every rank holds it
    for (const char* norm : {"q_norm.weight", "k_norm.weight"}) m.add_parameter(attn + norm, {hd}, DType::F32);
  if (c.qk_norm_whole) {  // one weight per row of the projection: each rank its heads' rows
    m.add_parameter(attn + "q_norm.weight", {q_rows}, DType::F32, {rows(attn + "q_norm.weight", p.q_head0 * hd, q_rows, 0)});
    m.add_parameter(attn + "k_norm.weight", {kv_rows}, DType::F32, {rows(attn + "k_norm.weight", lp.kv_head0 * hd, kv_rows, 0)});
  }
  m.add_parameter(attn + "o_proj.weight", {D, q_rows}, dtype, {columns(attn + "o_proj.weight", p.q_head0 * hd, q_rows)});
  if (c.o_bias && p.rank == 0) m.add_parameter(attn + "o_proj.bias", {D}, DType::F32);
  if (c.attention_sinks)  // one per query head: each rank its heads'
    m.add_parameter(attn + "sinks", {p.q_heads}, DType::F32, {rows(attn + "sinks", p.q_head0, p.q_heads, 0)});
}

// gpt-oss's stacked experts (transformers 5's tensors, read in place): split inside, each rank
// holds its units of every expert (gate_up's columns 2 x [ff0, ff0 + ff): a unit's gate and up are
// adjacent; down's rows; down's bias on rank 0, added once), or with expert parallelism whole
// experts (the stacks' slots [expert0, expert0 + experts), biases included).
void declare_stacked_experts(Model& m, const LlamaConfig& c, const RankPartition& p, const std::string& at, DType dtype) {
  const uint64_t D = c.hidden_size, E = p.experts, ff = p.expert_ff;
  const bool whole = p.experts != c.moe.num_experts;
  const std::string ex = at + "experts.";
  auto stack = [&](const std::string& name, Shape shape, size_t unit_dim, uint64_t unit0, DType type) {
    const Slice slice = whole ? Slice{0, p.expert0, p.expert0 + E} : Slice{unit_dim, unit0, unit0 + shape[unit_dim]};
    m.add_parameter(ex + name, std::move(shape), type, {ParameterShard{ex + name, slice, 0}});
  };
  stack("gate_up_proj", {E, D, 2 * ff}, 2, 2 * p.expert_ff0, dtype);
  stack("gate_up_proj_bias", {E, 2 * ff}, 1, 2 * p.expert_ff0, DType::F32);
  stack("down_proj", {E, ff, D}, 1, p.expert_ff0, dtype);
  if (whole)
    stack("down_proj_bias", {E, D}, 0, 0, DType::F32);
  else if (p.rank == 0)
    m.add_parameter(ex + "down_proj_bias", {E, D}, DType::F32);
}

// Llama 4's stacked experts (gate_up_proj [experts, hidden, 2 x units]: every unit's gate, then every
// unit's up; down_proj [experts, units, hidden]; no biases): split inside, each rank reads its units'
// gate columns and up columns as two stacks (experts.gate_proj, experts.up_proj [experts, hidden,
// units]) and down's rows; with expert parallelism its whole experts' slots.
void declare_stacked_halves(Model& m, const LlamaConfig& c, const RankPartition& p, const std::string& at, DType dtype) {
  const uint64_t D = c.hidden_size, E = p.experts, U = c.moe.expert_intermediate_size, ff = p.expert_ff;
  const std::string ex = at + "experts.";
  if (p.experts != c.moe.num_experts) {
    for (const char* stack : {"gate_up_proj", "down_proj"}) {
      const bool gate_up = std::string(stack) == "gate_up_proj";
      m.add_parameter(ex + stack, gate_up ? Shape{E, D, 2 * U} : Shape{E, U, D}, dtype,
                      {ParameterShard{ex + stack, Slice{0, p.expert0, p.expert0 + E}, 0}});
    }
    return;
  }
  m.add_parameter(ex + "gate_proj", {E, D, ff}, dtype, {ParameterShard{ex + "gate_up_proj", Slice{2, p.expert_ff0, p.expert_ff0 + ff}, 0}});
  m.add_parameter(ex + "up_proj", {E, D, ff}, dtype, {ParameterShard{ex + "gate_up_proj", Slice{2, U + p.expert_ff0, U + p.expert_ff0 + ff}, 0}});
  m.add_parameter(ex + "down_proj", {E, ff, D}, dtype, {ParameterShard{ex + "down_proj", Slice{1, p.expert_ff0, p.expert_ff0 + ff}, 0}});
}

// Latent attention: the low-rank projections into the latents (q_a_proj, kv_a_proj_with_mqa) and
// their norms whole on every rank (each computes the latents itself); q_b_proj (or q_proj) and
// kv_b_proj column-parallel by head, o_proj row-parallel.
void declare_latent_attention(Model& m, const LlamaConfig& c, const RankPartition& p, const std::string& attn, DType dtype) {
  const LatentAttention& a = c.mla;
  const uint64_t D = c.hidden_size, H = p.q_heads, qk = a.qk_head_dim(), kv = a.qk_nope_head_dim + a.v_head_dim;
  auto whole = [&](const std::string& name, Shape shape, DType type) { m.add_parameter(attn + name, std::move(shape), type); };
  if (a.q_lora_rank) {
    whole("q_a_proj.weight", {a.q_lora_rank, D}, dtype);
    if (c.qkv_bias) whole("q_a_proj.bias", {a.q_lora_rank}, DType::F32);
    whole("q_a_layernorm.weight", {a.q_lora_rank}, DType::F32);
    m.add_parameter(attn + "q_b_proj.weight", {H * qk, a.q_lora_rank}, dtype, {rows(attn + "q_b_proj.weight", p.q_head0 * qk, H * qk, 0)});
  } else {
    m.add_parameter(attn + "q_proj.weight", {H * qk, D}, dtype, {rows(attn + "q_proj.weight", p.q_head0 * qk, H * qk, 0)});
  }
  whole("kv_a_proj_with_mqa.weight", {a.kv_lora_rank + a.qk_rope_head_dim, D}, dtype);
  if (c.qkv_bias) whole("kv_a_proj_with_mqa.bias", {a.kv_lora_rank + a.qk_rope_head_dim}, DType::F32);
  whole("kv_a_layernorm.weight", {a.kv_lora_rank}, DType::F32);
  m.add_parameter(attn + "kv_b_proj.weight", {H * kv, a.kv_lora_rank}, dtype, {rows(attn + "kv_b_proj.weight", p.q_head0 * kv, H * kv, 0)});
  m.add_parameter(attn + "o_proj.weight", {D, H * a.v_head_dim}, dtype,
                  {columns(attn + "o_proj.weight", p.q_head0 * a.v_head_dim, H * a.v_head_dim)});
  if (c.o_bias && p.rank == 0) m.add_parameter(attn + "o_proj.bias", {D}, DType::F32);
}

void declare_moe(Model& m, const LlamaConfig& c, const RankPartition& p, uint64_t l, DType dtype) {
  const MlpNames& names = mlp_names(c.architecture);
  const std::string at = moe_prefix(c, l);
  const uint64_t D = c.hidden_size;
  const std::string router = router_prefix(c, l);
  m.add_parameter(router + "weight", {c.moe.num_experts, D}, DType::F32);
  if (c.moe.router_bias) m.add_parameter(router + "bias", {c.moe.num_experts}, DType::F32);
  if (c.moe.stacks == MoeConfig::Stacks::Interleaved) return declare_stacked_experts(m, c, p, at, dtype);
  if (c.moe.stacks == MoeConfig::Stacks::Halves) declare_stacked_halves(m, c, p, at, dtype);
  if (c.moe.score_correction_bias) m.add_parameter(at + "gate.e_score_correction_bias", {c.moe.num_experts}, DType::F32);
  // One tensor per expert; biases (gpt-oss's GGUF) as a dense MLP's, down's added by one rank: the
  // one holding the whole expert, or rank 0 where experts are split inside.
  const bool down_bias = p.experts != c.moe.num_experts || p.rank == 0;
  if (!c.moe.stacked())
    for (uint64_t e = p.expert0; e < p.expert0 + p.experts; ++e) {
      const std::string ex = fmt::format("{}experts.{}.", at, e);
      declare_mlp(m, ex, {ex + std::string(names.gate), ex + std::string(names.up), ex + std::string(names.down), ""},
                  c.moe.expert_intermediate_size, p.expert_ff0, p.expert_ff, D, dtype, c.moe.expert_bias, down_bias);
    }
  if (!c.moe.shared_expert_intermediate_size) return;
  const std::string sh = shared_expert_prefix(c, l);
  declare_mlp(m, sh,
              {sh + "gate_proj", sh + "up_proj", sh + std::string(names.shared_down), c.fused_shared_gate_up ? sh + std::string(names.shared_gate_up) : ""},
              c.moe.shared_expert_intermediate_size, p.shared_ff0, p.shared_ff, D, dtype, c.mlp_bias, p.rank == 0);
  if (c.moe.shared_expert_gated) m.add_parameter(at + std::string(names.shared_gate) + ".weight", {1, D}, DType::F32);
}

Error refuse_split(unsigned size, const std::string& why) {
  return Error(ErrorCode::ConfigInvalid, fmt::format("field 'tensor_parallel_size': {} {}", size, why));
}

// The loaders' rule for a rank's rows (loaders/rank_shards.hpp), counted in heads: an even split,
// or kv heads each shared by consecutive ranks when ranks outnumber them.
LayerPartition partition_layer(const LlamaConfig& c, uint64_t l, unsigned rank, unsigned size) {
  const uint64_t kv = c.layer_kv_heads(l), ff = c.layer_intermediate_size(l);
  const std::string layer = c.layer_widths.empty() ? "" : fmt::format("layer {}'s ", l);
  if (kv && kv % size != 0 && size % kv != 0)
    throw refuse_split(size, fmt::format("neither divides nor is a multiple of {}num_key_value_heads {}", layer, kv));
  if (ff && !c.moe_layer(l) && size > ff) throw refuse_split(size, fmt::format("leaves a rank without MLP units ({}intermediate_size {})", layer, ff));
  LayerPartition lp;
  if (kv) {
    lp.kv_heads = kv >= size ? kv / size : 1;
    lp.kv_head0 = rank_rows_begin(kv, lp.kv_heads, rank, size).value();
  }
  if (ff) std::tie(lp.ff0, lp.ff) = unit_range(ff, rank, size);
  return lp;
}

}  // namespace

LayerNorms layer_norms(const LlamaConfig& c) {
  if (c.post_norms_only) return {nullptr, "post_attention_layernorm", nullptr, "post_feedforward_layernorm"};
  if (c.glm_norms) return {"input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"};
  if (c.sandwich_norms) return {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"};
  return {"input_layernorm", nullptr, "post_attention_layernorm", nullptr};
}

std::string mlp_prefix(const LlamaConfig& c, uint64_t layer) {
  return fmt::format("model.layers.{}.{}.", layer, mlp_names(c.architecture).dense);
}

std::string moe_prefix(const LlamaConfig& c, uint64_t layer) {
  return fmt::format("model.layers.{}.{}.", layer, mlp_names(c.architecture).moe);
}

std::string router_prefix(const LlamaConfig& c, uint64_t layer) {
  return fmt::format("{}{}.", moe_prefix(c, layer), mlp_names(c.architecture).router);
}

std::string shared_expert_prefix(const LlamaConfig& c, uint64_t layer) {
  return fmt::format("model.layers.{}.{}.", layer, mlp_names(c.architecture).shared);
}

RankPartition partition_rank(const LlamaConfig& c, unsigned rank, unsigned size, bool expert_parallel) {
  if (size == 0) throw refuse_split(size, "must be at least 1");
  if (c.num_heads % size != 0) throw refuse_split(size, fmt::format("does not divide num_attention_heads {}", c.num_heads));
  if (size > c.vocab_size) throw refuse_split(size, "leaves a rank without vocabulary");
  if (expert_parallel && !c.moe.num_experts) throw refuse_split(size, "with expert parallelism needs a model with experts");
  if (expert_parallel && c.moe.num_experts % size != 0)
    throw refuse_split(size, fmt::format("does not divide num_experts {} (expert parallelism gives each rank whole experts)", c.moe.num_experts));
  if (c.moe.num_experts && ((!expert_parallel && size > c.moe.expert_intermediate_size) ||
                            (c.moe.shared_expert_intermediate_size && size > c.moe.shared_expert_intermediate_size)))
    throw refuse_split(size, "leaves a rank without expert units");
  RankPartition p;
  p.rank = rank;
  p.size = size;
  p.q_heads = c.num_heads / size;
  p.q_head0 = rank_rows_begin(c.num_heads, p.q_heads, rank, size).value();
  for (uint64_t l = 0; l < c.num_layers; ++l) p.layers.push_back(partition_layer(c, l, rank, size));
  p.experts = expert_parallel ? c.moe.num_experts / size : c.moe.num_experts;
  p.expert0 = expert_parallel ? rank * p.experts : 0;
  if (c.moe.num_experts)
    std::tie(p.expert_ff0, p.expert_ff) =
        expert_parallel ? std::pair<uint64_t, uint64_t>{0, c.moe.expert_intermediate_size} : unit_range(c.moe.expert_intermediate_size, rank, size);
  if (c.moe.shared_expert_intermediate_size)
    std::tie(p.shared_ff0, p.shared_ff) = unit_range(c.moe.shared_expert_intermediate_size, rank, size);
  p.vocab0 = c.vocab_size * rank / size;
  p.vocab = c.vocab_size * (rank + 1) / size - p.vocab0;
  return p;
}

Model declare_rank_parameters(const LlamaConfig& c, const RankPartition& p, DType dtype) {
  Model m;
  const uint64_t D = c.hidden_size;
  auto whole = [&](const std::string& name, uint64_t n) { m.add_parameter(name, {n}, DType::F32); };

  m.add_parameter("model.embed_tokens.weight", {p.vocab, D}, dtype, {rows("model.embed_tokens.weight", p.vocab0, p.vocab, 0)});
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    // A pruned layer's skipped sub-block has no tensors, its norm included.
    const bool attention = c.layer_kv_heads(l) != 0, ffn = c.moe_layer(l) || c.layer_intermediate_size(l) != 0;
    const LayerNorms norms = layer_norms(c);
    for (const char* norm : {norms.attn_in, norms.attn_out})
      if (norm && attention) whole(at + norm + ".weight", D);
    for (const char* norm : {norms.ffn_in, norms.ffn_out})
      if (norm && ffn) whole(at + norm + ".weight", D);
    if (attention && c.latent_attention())
      declare_latent_attention(m, c, p, at + "self_attn.", dtype);
    else if (attention)
      declare_attention(m, c, p, l, at + "self_attn.", dtype);
    if (c.moe_layer(l)) {
      declare_moe(m, c, p, l, dtype);
    } else if (ffn) {
      const std::string mlp = mlp_prefix(c, l);
      const LayerPartition& lp = p.layers[l];
      declare_mlp(m, mlp, {mlp + "gate_proj", mlp + "up_proj", mlp + "down_proj", c.fused_gate_up ? mlp + "gate_up_proj" : ""},
                  c.layer_intermediate_size(l), lp.ff0, lp.ff, D, dtype, c.mlp_bias, p.rank == 0);
    }
  }
  whole("model.norm.weight", D);
  if (!c.tie_word_embeddings)
    m.add_parameter("lm_head.weight", {p.vocab, D}, dtype, {rows("lm_head.weight", p.vocab0, p.vocab, 0)});
  return m;
}

}  // namespace wl
