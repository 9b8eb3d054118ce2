#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's qwen3moe: the q/k norms, the router, each projection's experts stacked (top-k always
// renormalised there: a model with norm_topk_prob false is refused by the converter's read-back).
constexpr GgufArchitecture::Stem kQwen3MoeGgufStems[] = {
    {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"}, {"mlp.gate", "ffn_gate_inp"}};
constexpr GgufArchitecture::Stack kQwen3MoeGgufStacks[] = {{"mlp.experts.", "gate_proj", "ffn_gate_exps"},
                                                           {"mlp.experts.", "up_proj", "ffn_up_exps"},
                                                           {"mlp.experts.", "down_proj", "ffn_down_exps"}};
constexpr GgufKey kQwen3MoeGgufKeys[] = {
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength,
     .absent_as = GgufQuantity::FeedForwardLength}};
// Qwen3's attention with its per-head q/k norms; experts beside any dense layers.
constexpr SplitTable kQwen3MoeSplits[] = {splits::kEmbedding, splits::kAttention, splits::kQkNorm, splits::kMlp, splits::kRouter,
    splits::kExperts, splits::kHead};
}  // namespace

// Qwen3-MoE: Qwen3's attention, experts without a shared one (top-k renormalised when norm_topk_prob);
// with use_sliding_window every layer slides (transformers 5 reads neither max_window_layers nor layer_types).
extern const Family kQwen3Moe{.model_type = "qwen3_moe", .architecture = "Qwen3MoeForCausalLM",
                              .window = Family::Window::AllWhenUsed, .experts = Family::Experts::Qwen3Moe,
                              .qk_norm = true,
                              .tensor_splits = kQwen3MoeSplits,
                              .gguf = {.name = "qwen3moe", .layer_stems = kQwen3MoeGgufStems, .stacks = kQwen3MoeGgufStacks,
                                       .keys = kQwen3MoeGgufKeys}};

}  // namespace wl
