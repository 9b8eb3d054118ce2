#include "families/family.hpp"

namespace wl {

namespace {
// The router, the shared expert with its sigmoid gate, and the experts' stacks.
constexpr GgufArchitecture::Stem kQwen2MoeGgufStems[] = {{"mlp.gate", "ffn_gate_inp"},
                                                         {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
                                                         {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
                                                         {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
                                                         {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"}};
constexpr GgufArchitecture::Stack kQwen2MoeGgufStacks[] = {{"mlp.experts.", "gate_proj", "ffn_gate_exps"},
                                                           {"mlp.experts.", "up_proj", "ffn_up_exps"},
                                                           {"mlp.experts.", "down_proj", "ffn_down_exps"}};
// Every layer sparse, the top-k weights never renormalised, a shared expert behind its sigmoid gate;
// llama-model.cpp's widths when absent.
constexpr GgufKey kQwen2MoeGgufKeys[] = {
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength,
     .absent_as = GgufQuantity::FeedForwardLength, .absent_per = GgufQuantity::ExpertUsedCount},
    {.suffix = "expert_shared_feed_forward_length", .quantity = GgufQuantity::ExpertSharedFeedForwardLength,
     .absent_as = GgufQuantity::FeedForwardLength}};
// Experts with a shared expert behind its sigmoid gate (replicated).
constexpr SplitTable kQwen2MoeSplits[] = {splits::kEmbedding, splits::kAttention, splits::kMlp, splits::kRouter,
    splits::kExperts, splits::kSharedExpert, splits::kSharedExpertGate, splits::kHead};
}  // namespace

// Qwen2-MoE: Qwen2's attention (its q/k/v biases unless qkv_bias is false), experts with a sigmoid-gated
// shared expert.
extern const Family kQwen2Moe{.model_type = "qwen2_moe", .architecture = "Qwen2MoeForCausalLM",
                              .window = Family::Window::FromLayer, .experts = Family::Experts::Qwen2Moe,
                              .biases = Family::Biases::QkvDefault, .qkv_bias_key = "qkv_bias", .follows_layer_types = true,
                              .mlp = {.shared = "mlp.shared_expert", .shared_gate = "shared_expert_gate", .stacks = kTransformers5Stacks},
                              .tensor_splits = kQwen2MoeSplits,
                              .gguf = {.name = "qwen2moe", .layer_stems = kQwen2MoeGgufStems, .stacks = kQwen2MoeGgufStacks,
                                       .keys = kQwen2MoeGgufKeys, .renormalises_top_k = false}};

}  // namespace wl
