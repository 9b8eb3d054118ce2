#include "families/family.hpp"

namespace wl {

// DeepSeek-V3: V2's latent attention (rope_interleave: the rotary pairs adjacent, or halves), experts
// chosen from sigmoid scores plus e_score_correction_bias among the best topk_group of n_group groups
// (each scored by its best two), weighted by the scores alone, renormalised when norm_topk_prob, times
// routed_scaling_factor; shared experts added ungated; the first first_k_dense_replace layers dense.
// Not written as GGUF: llama.cpp's deepseek2 (at c392e509) chooses experts without groups, and its
// exp_probs_b.bias (e_score_correction_bias) is a name the gguf scheme's layer stems cannot give.
extern const Family kDeepseekV3{.model_type = "deepseek_v3", .architecture = "DeepseekV3ForCausalLM",
                                .experts = Family::Experts::DeepseekV3, .latent_attention = true,
                                .mlp = {.shared = "mlp.shared_experts", .stacks = kTransformers5Stacks}};

}  // namespace wl
