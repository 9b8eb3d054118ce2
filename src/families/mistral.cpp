#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's llama (Llama's keys).
constexpr GgufKey kMistralGgufKeys[] = {{.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount}};
}  // namespace

// Mistral: Llama's tensors without biases (attention_bias ignored, as transformers does), a sliding
// window over every layer when set. Mistral Small 3.1 and later are Mistral3ForConditionalGeneration:
// this language model beside a Pixtral vision encoder.
extern const Family kMistral{.model_type = "mistral", .architecture = "MistralForCausalLM", .window = Family::Window::All,
                           .biases = Family::Biases::None, .tensor_splits = splits::kDense,
                           .multimodal = {"mistral3", "Mistral3ForConditionalGeneration"},
                           .gguf = {.name = "llama", .interleaved_rotary = true, .keys = kMistralGgufKeys}};

}  // namespace wl
