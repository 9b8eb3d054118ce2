#include "families/deepseek2_gguf.hpp"

namespace wl {

namespace {
// Latent attention; dense first layers, then experts beside shared experts.
constexpr SplitTable kDeepseekV2Splits[] = {splits::kEmbedding, splits::kLatentAttention, splits::kMlp, splits::kRouter,
    splits::kExperts, splits::kSharedExpert, splits::kHead};
}  // namespace

// DeepSeek-V2: multi-head latent attention (queries through q_proj, or q_a_proj and q_b_proj when
// q_lora_rank is set; keys and values from one normalised latent, the rotary dimensions turning in
// adjacent pairs), experts chosen from softmax scores (greedy, or group_limited_greedy: the best
// topk_group groups by their best expert), shared experts added ungated, the first
// first_k_dense_replace layers dense. llama.cpp's deepseek2 (at c392e509) takes q_proj for the
// 27-layer model only: q_lora_rank null in a model of other depth (or set in one of 27 layers) is
// refused by the converter's read-back; so is grouped choice, which llama.cpp (since its groups)
// scores by each group's best two (V3's rule), not its best expert. mlp_bias: the dense and shared
// MLPs' biases (the routed experts have none).
extern const Family kDeepseekV2{.model_type = "deepseek_v2", .architecture = "DeepseekV2ForCausalLM",
                                .experts = Family::Experts::DeepseekV2, .mlp_bias = true, .latent_attention = true,
                                .mlp = {.shared = "mlp.shared_experts", .stacks = kTransformers5Stacks},
                                .tensor_splits = kDeepseekV2Splits,
                                .gguf = kDeepseek2Gguf};

}  // namespace wl
