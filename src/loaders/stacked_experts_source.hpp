// transformers 5's stacked experts, presented one tensor per expert and projection.
#pragma once

#include <memory>

#include "weightloader/source.hpp"

namespace wl {

// A mixture-of-experts checkpoint that transformers 5 wrote (metadata["config.json"]'s model_type
// mixtral, qwen2_moe, deepseek_v2/v3, each layer's experts in mlp.experts.gate_up_proj / down_proj;
// granitemoe and granitemoeshared, in block_sparse_moe.input_linear / output_linear) as the
// family's earlier checkpoints name it (unstacked_experts, unstacked_router): each expert's gate, up
// and down projection a view of its rows of the stored stack, so loaders, tensor-parallel slices and
// the engine read the stacks in place, and either layout loads into either kind of module. `source`
// itself when nothing is stacked. A stack that is not [experts, rows, cols] of contiguous, undecoded
// values with whole halves is UnsupportedLayout, naming it.
std::unique_ptr<WeightSource> with_experts_unstacked(std::unique_ptr<WeightSource> source);

}  // namespace wl
