#include "engine/tensor_parallel.hpp"

#include <optional>
#include <span>
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

// A quantity's whole size and the rank's range of it.
struct Range {
  uint64_t full = 0, begin = 0, count = 0;
};

Range range(Extent e, const LlamaConfig& c, const RankPartition& p, uint64_t l) {
  const uint64_t hd = c.head_dim, U = c.moe.expert_intermediate_size;
  const LatentAttention& a = c.mla;
  auto whole = [](uint64_t n) { return Range{n, 0, n}; };
  auto heads = [&](uint64_t per_head) { return Range{c.num_heads * per_head, p.q_head0 * per_head, p.q_heads * per_head}; };
  switch (e) {
    case Extent::None:
    case Extent::Parts: break;
    case Extent::One: return whole(1);
    case Extent::Hidden: return whole(c.hidden_size);
    case Extent::HeadDim: return whole(hd);
    case Extent::Vocab: return {c.vocab_size, p.vocab0, p.vocab};
    case Extent::QueryHeads: return heads(1);
    case Extent::QueryRows: return heads(hd);
    case Extent::KvRows: return {c.layer_kv_heads(l) * hd, p.layers[l].kv_head0 * hd, p.layers[l].kv_heads * hd};
    case Extent::Units: return {c.layer_intermediate_size(l), p.layers[l].ff0, p.layers[l].ff};
    case Extent::ExpertUnits: return {U, p.expert_ff0, p.expert_ff};
    case Extent::PairedExpertUnits: return {2 * U, 2 * p.expert_ff0, 2 * p.expert_ff};
    case Extent::SharedUnits: return {c.moe.shared_expert_intermediate_size, p.shared_ff0, p.shared_ff};
    case Extent::Experts: return {c.moe.num_experts, p.expert0, p.experts};
    case Extent::QLoraRank: return whole(a.q_lora_rank);
    case Extent::KvLoraRank: return whole(a.kv_lora_rank);
    case Extent::KvLatentRows: return whole(a.kv_lora_rank + a.qk_rope_head_dim);
    case Extent::LatentQueryRows: return heads(a.qk_head_dim());
    case Extent::LatentKvRows: return heads(a.qk_nope_head_dim + a.v_head_dim);
    case Extent::LatentValueRows: return heads(a.v_head_dim);
  }
  return {};
}

bool holds(When w, const LlamaConfig& c, const RankPartition& p) {
  switch (w) {
    case When::Always: return true;
    case When::Never: return false;
    case When::QkvBias: return c.qkv_bias;
    case When::OBias: return c.o_bias;
    case When::MlpBias: return c.mlp_bias;
    case When::QkNorm: return c.qk_norm;
    case When::QkNormWhole: return c.qk_norm_whole;
    case When::Sinks: return c.attention_sinks;
    case When::Untied: return !c.tie_word_embeddings;
    case When::QLora: return c.mla.q_lora_rank != 0;
    case When::NoQLora: return c.mla.q_lora_rank == 0;
    case When::RouterBias: return c.moe.router_bias;
    case When::ExpertBias: return c.moe.expert_bias;
    case When::ScoreCorrectionBias: return c.moe.score_correction_bias;
    case When::SharedExpert: return c.moe.shared_expert_intermediate_size != 0;
    case When::SharedExpertGated: return c.moe.shared_expert_gated;
    case When::PerExpertTensors: return !c.moe.stacked();
    case When::InterleavedStacks: return c.moe.stacks == MoeConfig::Stacks::Interleaved;
    case When::HalvesStacks: return c.moe.stacks == MoeConfig::Stacks::Halves;
    case When::ExpertsSplit: return p.experts == c.moe.num_experts;
    case When::ExpertsWhole: return p.experts != c.moe.num_experts;
    case When::FusedQkv: return c.fused_checkpoint;
    case When::FusedGateUp: return c.fused_gate_up;
    case When::FusedSharedGateUp: return c.fused_shared_gate_up;
  }
  return false;
}

// Declares rank p's parameters of a split table, walking its rows (src/families/tensor_splits.hpp).
class SplitWalk {
 public:
  SplitWalk(Model& m, const LlamaConfig& c, const RankPartition& p, DType dtype)
      : m_(m), c_(c), p_(p), dtype_(dtype), names_(mlp_names(c.architecture)) {}

  // The table's rows under `at` on layer l (0 for the top-level ones).
  void declare(const SplitTable& table, const std::string& at, uint64_t l) {
    for (const TensorSplit& row : table.rows) declare(row, at, l, table.module == Module::Expert);
  }

 private:
  void declare(const TensorSplit& row, const std::string& at, uint64_t l, bool expert) {
    for (When w : row.when)
      if (!holds(w, c_, p_)) return;
    size_t experts_dim = row.dims.size();  // the dim of whole experts, when the rank holds some of them
    for (size_t d = 0; d < row.dims.size(); ++d)
      if (row.dims[d] == Extent::Experts && p_.experts != c_.moe.num_experts) experts_dim = d;
    // An expert's row-parallel bias is added by the rank holding the whole expert, or else by rank 0.
    const bool whole_experts = expert ? p_.experts != c_.moe.num_experts : experts_dim < row.dims.size();
    if (row.placement == Placement::RankZero && p_.rank != 0 && !whole_experts) return;
    const std::string name = at + named(row.name);
    const DType type = row.f32 ? DType::F32 : dtype_;
    Shape shape;
    for (Extent e : row.dims) {
      if (e == Extent::None) break;
      if (e == Extent::Parts) {
        uint64_t rows = 0;
        for (const SplitPart& part : row.parts)
          if (part.rows != Extent::None) rows += range(part.rows, c_, p_, l).count;
        shape.push_back(rows);
      } else {
        const Range r = range(e, c_, p_, l);
        shape.push_back(row.placement == Placement::Whole ? r.full : r.count);
      }
    }
    if (row.placement == Placement::Whole) {
      m_.add_parameter(name, std::move(shape), type);
    } else if (experts_dim < row.dims.size()) {  // expert parallel: the rank's block of whole experts
      const std::string from = row.parts[0].from.empty() ? name : at + named(row.parts[0].from);
      m_.add_parameter(name, std::move(shape), type, {ParameterShard{from, Slice{experts_dim, p_.expert0, p_.expert0 + p_.experts}, 0}});
    } else if (row.placement == Placement::RankZero) {
      m_.add_parameter(name, std::move(shape), type);
    } else {
      m_.add_parameter(name, std::move(shape), type, shards(row, at, name, l));
    }
  }

  // Each part's rank range along the split dim, one after another; a fused checkpoint tensor holds
  // every part's whole rows in order.
  std::vector<ParameterShard> shards(const TensorSplit& row, const std::string& at, const std::string& name, uint64_t l) {
    const bool fused = holds(row.fused, c_, p_);
    const std::string fused_from = row.fused_from.empty() ? name : at + named(row.fused_from);
    std::vector<SplitPart> parts;
    for (const SplitPart& part : row.parts)
      if (part.rows != Extent::None) parts.push_back(part);
    if (parts.empty()) parts.push_back({row.name, row.dims[row.split]});
    std::vector<ParameterShard> out;
    uint64_t in_fused = 0, offset = 0;
    for (const SplitPart& part : parts) {
      const Range r = range(part.rows, c_, p_, l);
      const uint64_t begin = (fused ? in_fused : part.after * r.full) + r.begin;
      out.push_back(ParameterShard{fused ? fused_from : at + named(part.from), Slice{row.split, begin, begin + r.count}, offset});
      in_fused += r.full;
      offset += r.count;
    }
    return out;
  }

  std::string named(std::string_view name) const {
    if (std::optional<std::string> resolved = split_name(name, names_)) return *resolved;
    throw Error(ErrorCode::ConfigInvalid, fmt::format("tensor split '{}' names no MLP name of {}", name, c_.architecture));
  }

  Model& m_;
  const LlamaConfig& c_;
  const RankPartition& p_;
  DType dtype_;
  const MlpNames& names_;
};

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
  SplitWalk walk(m, c, p, dtype);
  const std::span<const SplitTable> tables = tensor_splits(c.architecture);
  auto declare_all = [&](Module module, const std::string& at, uint64_t l) {
    for (const SplitTable& t : tables)
      if (t.module == module && holds(t.when, c, p)) walk.declare(t, at, l);
  };
  declare_all(Module::ModelStart, "", 0);
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    // A pruned layer's skipped sub-block has no tensors, its norm included.
    const bool attention = c.layer_kv_heads(l) != 0, sparse = c.moe_layer(l), dense = !sparse && c.layer_intermediate_size(l) != 0;
    const LayerNorms norms = layer_norms(c);  // every norm whole on every rank
    for (const char* norm : {norms.attn_in, norms.attn_out})
      if (norm && attention) m.add_parameter(at + norm + ".weight", {c.hidden_size}, DType::F32);
    for (const char* norm : {norms.ffn_in, norms.ffn_out})
      if (norm && (sparse || dense)) m.add_parameter(at + norm + ".weight", {c.hidden_size}, DType::F32);
    // The layer's tables in the family's order, each where its module is.
    for (const SplitTable& t : tables) {
      if (!holds(t.when, c, p)) continue;
      if (t.module == Module::Attention && attention) walk.declare(t, at + "self_attn.", l);
      if (t.module == Module::Mlp && dense) walk.declare(t, mlp_prefix(c, l), l);
      if (t.module == Module::Moe && sparse) walk.declare(t, moe_prefix(c, l), l);
      if (t.module == Module::Shared && sparse) walk.declare(t, shared_expert_prefix(c, l), l);
      if (t.module == Module::Expert && sparse)
        for (uint64_t e = p.expert0; e < p.expert0 + p.experts; ++e) walk.declare(t, fmt::format("{}experts.{}.", moe_prefix(c, l), e), l);
    }
  }
  declare_all(Module::ModelEnd, "", 0);
  return m;
}

}  // namespace wl
