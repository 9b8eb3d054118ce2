#include "families/deepseek2_gguf.hpp"

namespace wl {

namespace {
// V2's, with the routers' e_score_correction_bias (replicated).
constexpr SplitTable kDeepseekV3Splits[] = {splits::kEmbedding, splits::kLatentAttention, splits::kMlp, splits::kRouter,
    splits::kScoreCorrection, splits::kExperts, splits::kSharedExpert, splits::kHead};
}  // namespace

// DeepSeek-V3: V2's latent attention (rope_interleave: the rotary pairs adjacent, or halves), experts
// chosen from sigmoid scores plus e_score_correction_bias among the best topk_group of n_group groups
// (each scored by its best two), weighted by the scores alone, renormalised when norm_topk_prob, times
// routed_scaling_factor; shared experts added ungated; the first first_k_dense_replace layers dense.
// Written as llama.cpp's deepseek2 with sigmoid gating, exp_probs_b.bias and gguf-py 0.19's group
// keys, which newer llama.cpp reads (the c392e509 snapshot here predates them: it chooses without groups).
extern const Family kDeepseekV3{.model_type = "deepseek_v3", .architecture = "DeepseekV3ForCausalLM",
                                .experts = Family::Experts::DeepseekV3, .latent_attention = true,
                                .mlp = {.shared = "mlp.shared_experts", .stacks = kTransformers5Stacks},
                                .tensor_splits = kDeepseekV3Splits, .gguf = kDeepseek2Gguf};

}  // namespace wl
