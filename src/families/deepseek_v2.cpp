#include "families/family.hpp"

namespace wl {

// DeepSeek-V2: multi-head latent attention (queries through q_proj, or q_a_proj and q_b_proj when
// q_lora_rank is set; keys and values from one normalised latent, the rotary dimensions turning in
// adjacent pairs), experts chosen from softmax scores (greedy, or group_limited_greedy: the best
// topk_group groups by their best expert), shared experts added ungated, the first
// first_k_dense_replace layers dense.
extern const Family kDeepseekV2{.model_type = "deepseek_v2", .architecture = "DeepseekV2ForCausalLM",
                                .experts = Family::Experts::DeepseekV2, .latent_attention = true,
                                .mlp = {.shared = "mlp.shared_experts", .stacks = kTransformers5Stacks}};

}  // namespace wl
