// llama.cpp's granite keys, which Granite and Granite-MoE (granitemoe_gguf.hpp) both write.
#pragma once

#include "families/family.hpp"

namespace wl {

// convert_hf_to_gguf.py's GraniteModel: Llama's keys, each _multiplier as a _scale; llama-model.cpp
// requires all four.
inline constexpr GgufKey kGraniteGgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "embedding_scale", .quantity = GgufQuantity::EmbeddingScale, .required = true},
    {.suffix = "attention.scale", .quantity = GgufQuantity::AttentionScale, .required = true},
    {.suffix = "residual_scale", .quantity = GgufQuantity::ResidualScale, .required = true},
    {.suffix = "logit_scale", .quantity = GgufQuantity::LogitScale, .required = true}};

}  // namespace wl
