#include "families/family.hpp"

namespace wl {

namespace {
// convert_hf_to_gguf.py's GraniteModel: Llama's keys, each _multiplier as a _scale; llama-model.cpp
// requires all four.
constexpr GgufKey kGraniteGgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "embedding_scale", .quantity = GgufQuantity::EmbeddingScale, .required = true},
    {.suffix = "attention.scale", .quantity = GgufQuantity::AttentionScale, .required = true},
    {.suffix = "residual_scale", .quantity = GgufQuantity::ResidualScale, .required = true},
    {.suffix = "logit_scale", .quantity = GgufQuantity::LogitScale, .required = true}};
}  // namespace

// IBM Granite 3: Llama with multipliers (embeddings, attention scores, each block's output) and
// logits divided by logits_scaling. llama.cpp's granite is its llama (q/k rows interleaved) with
// the multipliers as {embedding,residual,logit}_scale and attention.scale.
extern const Family kGranite{.model_type = "granite", .architecture = "GraniteForCausalLM", .mlp_bias = true,
                             .multipliers = true, .gguf = {.name = "granite", .interleaved_rotary = true, .keys = kGraniteGgufKeys}};

}  // namespace wl
