#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's llama rotates whole heads.
constexpr GgufKey kLlamaGgufKeys[] = {{.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount}};
}  // namespace

// Llama 1-3: attention_bias and mlp_bias optional, no sliding window.
extern const Family kLlama{.model_type = "llama", .architecture = "LlamaForCausalLM", .mlp_bias = true,
                         .tensor_splits = splits::kDense,
                         .gguf = {.name = "llama", .interleaved_rotary = true, .keys = kLlamaGgufKeys}};

}  // namespace wl
