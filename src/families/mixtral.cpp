#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's "llama" with experts: each projection's experts stacked.
constexpr GgufArchitecture::Stack kMixtralGgufStacks[] = {{"block_sparse_moe.experts.", "w1", "ffn_gate_exps"},
                                                          {"block_sparse_moe.experts.", "w3", "ffn_up_exps"},
                                                          {"block_sparse_moe.experts.", "w2", "ffn_down_exps"}};
// Llama's keys and the experts' counts (llama.cpp: softmax, top-k, renormalised).
constexpr GgufKey kMixtralGgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .write = GgufKey::Write::Never,
     .absent_as = GgufQuantity::FeedForwardLength}};
}  // namespace

// Mixtral: Mistral with num_local_experts experts (block_sparse_moe), top-k renormalised.
extern const Family kMixtral{.model_type = "mixtral", .architecture = "MixtralForCausalLM", .window = Family::Window::All,
                             .experts = Family::Experts::Mixtral, .mlp = kBlockSparseMoe,
                             .gguf = {.name = "llama", .interleaved_rotary = true, .stacks = kMixtralGgufStacks,
                                      .keys = kMixtralGgufKeys}};

}  // namespace wl
