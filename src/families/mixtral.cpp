#include "families/family.hpp"

namespace wl {

namespace {
// Llama's keys and the experts' counts (llama.cpp: softmax, top-k, renormalised).
constexpr GgufKey kMixtralGgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .write = GgufKey::Write::Never,
     .absent_as = GgufQuantity::FeedForwardLength}};
}  // namespace

// Mixtral: Mistral with num_local_experts experts (block_sparse_moe), top-k renormalised; no biases;
// rope_theta 1e6 unless set.
extern const Family kMixtral{.model_type = "mixtral", .architecture = "MixtralForCausalLM", .window = Family::Window::All,
                             .experts = Family::Experts::Mixtral, .biases = Family::Biases::None, .rope_theta_default = 1e6,
                             .mlp = kBlockSparseMoe,
                             .tensor_splits = splits::kSparse,
                             .gguf = {.name = "llama", .interleaved_rotary = true, .stacks = kBlockSparseMoeGgufStacks,
                                      .keys = kMixtralGgufKeys}};

}  // namespace wl
