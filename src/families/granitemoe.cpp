#include "families/granitemoe_gguf.hpp"

namespace wl {

// IBM Granite-MoE (Granite 3.0 MoE): Granite's multipliers on Mixtral's routing (the softmax of the
// top num_experts_per_tok router logits: Mixtral's renormalised weights) over num_local_experts of
// intermediate_size. The checkpoint stacks each layer's experts: block_sparse_moe.input_linear
// [experts, 2 * intermediate_size, hidden] (gate rows, then up rows), output_linear [experts,
// hidden, intermediate_size], the router as block_sparse_moe.router.layer (src/naming/stacked_experts.cpp
// presents them as Mixtral's).
extern const Family kGraniteMoe{.model_type = "granitemoe", .architecture = "GraniteMoeForCausalLM",
                                .experts = Family::Experts::Mixtral, .multipliers = true, .stacked_experts = true,
                                .mlp = kGraniteMoeMlp,
                                .tensor_splits = splits::kSparse,
                                .gguf = kGraniteMoeGguf};

}  // namespace wl
