// How a model is split over tensor-parallel ranks (Megatron-style, as vLLM does it):
// q/k/v and gate/up are column-parallel (each rank owns whole heads and a range of the MLP's
// intermediate units), o_proj and down_proj row-parallel (the matching input columns), the
// embedding and lm_head vocabulary-parallel. kv heads are replicated when ranks outnumber them.
// Experts split inside, as the dense MLP does (each rank holds its units of every expert), or, with
// expert parallelism (vLLM's enable_expert_parallel), whole: rank r holds block r of them and
// computes only the chosen ones it holds (the all-reduce after the MLP sums every rank's experts).
// The router and the shared expert's gate are replicated; the shared expert splits inside.
// gpt-oss's and Llama 4's stacked experts split the same two ways, each rank reading its slice of
// the stacks (Llama 4's gate and up halves as two stacks of its units);
// its attention sinks split with their heads.
// Latent attention (DeepSeek) splits by head as q/k/v do; its latents are computed on every rank.
// Which tensor splits how is each family's data (Family::tensor_splits, src/families/tensor_splits.hpp):
// declare_rank_parameters walks its rows with the ranges partition_rank computes.
#pragma once

#include <cstdint>
#include <vector>

#include "weightloader/engine/llama_config.hpp"
#include "weightloader/model.hpp"

namespace wl {

// A rank's share of one layer, whose widths may differ from the other layers' (pruned models).
struct LayerPartition {
  uint64_t kv_head0 = 0, kv_heads = 0;  // the kv heads this rank's query heads read (0: no attention)
  uint64_t ff0 = 0, ff = 0;             // intermediate units (0: no MLP)
};

struct RankPartition {
  unsigned rank = 0;
  unsigned size = 1;
  uint64_t q_head0 = 0, q_heads = 0;    // this rank's query heads (the same on every layer)
  std::vector<LayerPartition> layers;   // one per layer
  uint64_t expert0 = 0, experts = 0;       // the experts this rank holds (all, unless expert parallel)
  uint64_t expert_ff0 = 0, expert_ff = 0;  // each expert's intermediate units
  uint64_t shared_ff0 = 0, shared_ff = 0;  // the shared expert's
  uint64_t vocab0 = 0, vocab = 0;       // vocabulary rows
};

// ConfigInvalid (naming tensor_parallel_size, and the layer when the layers differ in width) when
// the heads, or with `expert_parallel` the experts, cannot be split evenly.
RankPartition partition_rank(const LlamaConfig& config, unsigned rank, unsigned size, bool expert_parallel = false);

// Declares rank `p`'s parameters under vLLM's names (qkv_proj, gate_up_proj, ...), each shard
// reading only its slice of the checkpoint's Hugging Face tensors (of each part of a fused one).
// Matrices and the embedding are stored in `dtype`; norms, biases and routers in F32.
// Row-parallel biases live on rank 0 only (added once after the all-reduce); lm_head is absent
// when the embeddings are tied.
Model declare_rank_parameters(const LlamaConfig& config, const RankPartition& p, DType dtype);

// The norms of a layer, as the checkpoint names them (without ".weight"; null: the family has none
// there): each sublayer's input norm and its output norm. Llama: input_layernorm and
// post_attention_layernorm (the MLP's input); Gemma 2 adds the outputs' (post_attention_layernorm,
// pre_ and post_feedforward_layernorm); GLM-4 names those four its way; OLMo 2 has outputs only.
struct LayerNorms {
  const char *attn_in = nullptr, *attn_out = nullptr, *ffn_in = nullptr, *ffn_out = nullptr;
};
LayerNorms layer_norms(const LlamaConfig& config);

// Where layer l's MLP lives, as its family names it (MlpNames, src/families/family.hpp): a dense
// layer's ("model.layers.{l}.mlp."; Llama 4: "...feed_forward."), a sparse layer's experts
// ("...mlp.", Mixtral: "...block_sparse_moe."), their router ("...mlp.gate.", gpt-oss:
// "...mlp.router.") and the shared expert ("...mlp.shared_expert.", DeepSeek: "...mlp.shared_experts.",
// Granite-MoE-Shared: "model.layers.{l}.shared_mlp.").
std::string mlp_prefix(const LlamaConfig& config, uint64_t layer);
std::string moe_prefix(const LlamaConfig& config, uint64_t layer);
std::string router_prefix(const LlamaConfig& config, uint64_t layer);
std::string shared_expert_prefix(const LlamaConfig& config, uint64_t layer);

}  // namespace wl
