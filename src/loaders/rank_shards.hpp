// Tensor-parallel shards from shapes, Megatron's and vLLM's conventions: which slice of which
// checkpoint tensor fills each parameter of one rank's model. Per parameter, from its shape on the
// rank and the checkpoint tensor's shape (both under the model's names, after the name mapping):
// - the same shape: replicated, the whole tensor (norms, row-parallel biases, a replicated embedding);
// - the checkpoint's shape with exactly one dimension divided by the ranks: the rank's slice along
//   it (column-parallel q/k/v, gate/up, a vocabulary-parallel embedding or lm_head: dim 0;
//   row-parallel o_proj/down_proj: dim 1). The split is even, as in vLLM and Megatron: a dimension
//   the ranks do not divide is an error, never a ragged split;
// - along dim 0, fewer rows than an even split but a whole number of blocks of them, each block
//   shared by consecutive ranks: how vLLM replicates kv heads when ranks outnumber them;
// - a fused parameter (vLLM's qkv_proj from q_proj, k_proj, v_proj; gate_up_proj from gate_proj,
//   up_proj) takes each part's rank slice at its row offset: the first part splits evenly, the
//   others share the remaining rows in proportion to their sizes (GQA: k and v get the rank's kv heads).
// Shapes never point at two dims, so the rule needs no hint; shard_dims states the intent for the
// parameters it matches, and a shape that does not fit it is an error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/source.hpp"

namespace wl {

// A shard_dims entry: parameters whose name `pattern` matches (a glob, or an ECMAScript regular
// expression matching the whole name, the dialect of regex_rename) split along `dim`; nullopt
// makes them replicated.
struct ShardDim {
  std::string pattern;
  std::optional<int64_t> dim;
};

// Fused parameters: a name component (qkv_proj) → the components of its parts, in row order.
using FusedParts = std::map<std::string, std::vector<std::string>>;

// vLLM's: qkv_proj from q_proj, k_proj, v_proj; gate_up_proj from gate_proj, up_proj.
const FusedParts& vllm_fused();

struct RankLayout {
  int64_t rank = 0;
  int64_t size = 1;
  std::vector<ShardDim> shard_dims;
  FusedParts fused = vllm_fused();  // applied where the checkpoint has every part and not the fused name
};

using ParameterShards = std::map<std::string, std::vector<ParameterShard>>;

// InvalidArgument unless size >= 1 and 0 <= rank < size.
void check_rank(int64_t rank, int64_t size);

// Where rank `rank` of `size` begins its `rows` of `full`: an even split (rows * size == full), or
// a block of `rows` shared by size / (full / rows) consecutive ranks; nullopt when it is neither.
std::optional<uint64_t> rank_rows_begin(uint64_t full, uint64_t rows, uint64_t rank, uint64_t size);

// The shards of every parameter filled from slices or parts; the others (absent: the whole tensor
// of their name, or missing, which the load reports) are not listed. params: each parameter's
// shape on this rank; checkpoint: each tensor's full shape. ShapeMismatch (naming the parameter)
// for a shape no rule explains; InvalidArgument for patterns that give one parameter different dims.
ParameterShards plan_rank_shards(const std::vector<std::pair<std::string, Shape>>& params,
                                 const std::unordered_map<std::string, Shape>& checkpoint, const RankLayout& layout);

// The same for `model`'s parameters without shards, against `source`'s tensors under the names
// `options` give them for this model (its explicit names, or name_map=auto, fused parts included):
// what to set as their shards before load_weights.
ParameterShards plan_rank_shards(const Model& model, const WeightSource& source, const LoadOptions& options,
                                 const RankLayout& layout);

}  // namespace wl
