// llama.cpp's granitemoe, which Granite-MoE and Granite-MoE-Shared are both written as
// (granitemoe.cpp, granitemoeshared.cpp): one description, read back as either by whether the file
// has a shared MLP.
#pragma once

#include "families/granite_gguf.hpp"

namespace wl {

// The experts as Mixtral's stacks (llama.cpp's converter splits input_linear into gate and up rows;
// the engine sees them split already); the shared MLP as ffn_{gate,up,down}_shexp, its input_linear
// split into gate and up rows as the converter does.
inline constexpr GgufArchitecture::Stem kGraniteMoeGgufStems[] = {{"shared_mlp.gate_proj", "ffn_gate_shexp"},
                                                                  {"shared_mlp.up_proj", "ffn_up_shexp"},
                                                                  {"shared_mlp.output_linear", "ffn_down_shexp"}};
inline constexpr GgufArchitecture::Split kGraniteMoeGgufSplits[] = {
    {"shared_mlp.input_linear", {"shared_mlp.gate_proj", "shared_mlp.up_proj"}}};
// Granite's keys, the experts', and the shared MLP's width (convert_hf_to_gguf.py writes
// expert_shared_feed_forward_length when shared_intermediate_size is set).
inline constexpr GgufKey kGraniteMoeExpertKeys[] = {
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .write = GgufKey::Write::Never,
     .absent_as = GgufQuantity::FeedForwardLength},
    {.suffix = "expert_shared_feed_forward_length", .quantity = GgufQuantity::ExpertSharedFeedForwardLength,
     .write = GgufKey::Write::WhenSet}};
inline constexpr auto kGraniteMoeGgufKeys = joined_keys(kGraniteGgufKeys, kGraniteMoeExpertKeys);
inline constexpr GgufArchitecture kGraniteMoeGguf{.name = "granitemoe", .layer_stems = kGraniteMoeGgufStems, .interleaved_rotary = true,
                                                  .stacks = kBlockSparseMoeGgufStacks, .splits = kGraniteMoeGgufSplits,
                                                  .keys = kGraniteMoeGgufKeys};

}  // namespace wl
