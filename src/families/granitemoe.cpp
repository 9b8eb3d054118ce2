#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's granitemoe: Granite's keys, and the experts as Mixtral's stacks (its converter splits
// input_linear into gate and up rows; the engine sees them split already).
constexpr GgufArchitecture::Stack kGraniteMoeGgufStacks[] = {{"block_sparse_moe.experts.", "w1", "ffn_gate_exps"},
                                                             {"block_sparse_moe.experts.", "w3", "ffn_up_exps"},
                                                             {"block_sparse_moe.experts.", "w2", "ffn_down_exps"}};
constexpr GgufKey kGraniteMoeGgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "embedding_scale", .quantity = GgufQuantity::EmbeddingScale, .required = true},
    {.suffix = "attention.scale", .quantity = GgufQuantity::AttentionScale, .required = true},
    {.suffix = "residual_scale", .quantity = GgufQuantity::ResidualScale, .required = true},
    {.suffix = "logit_scale", .quantity = GgufQuantity::LogitScale, .required = true},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .write = GgufKey::Write::Never,
     .absent_as = GgufQuantity::FeedForwardLength}};
}  // namespace

// IBM Granite-MoE (Granite 3.0 MoE): Granite's multipliers on Mixtral's routing (the softmax of the
// top num_experts_per_tok router logits: Mixtral's renormalised weights) over num_local_experts of
// intermediate_size. The checkpoint stacks each layer's experts: block_sparse_moe.input_linear
// [experts, 2 * intermediate_size, hidden] (gate rows, then up rows), output_linear [experts,
// hidden, intermediate_size], the router as block_sparse_moe.router.layer (src/naming/stacked_experts.cpp
// presents them as Mixtral's).
extern const Family kGraniteMoe{.model_type = "granitemoe", .architecture = "GraniteMoeForCausalLM",
                                .experts = Family::Experts::Mixtral, .multipliers = true, .stacked_experts = true,
                                .mlp = kGraniteMoeMlp,
                                .gguf = {.name = "granitemoe", .interleaved_rotary = true, .stacks = kGraniteMoeGgufStacks,
                                         .keys = kGraniteMoeGgufKeys}};

}  // namespace wl
