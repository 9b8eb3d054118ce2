#include "families/family.hpp"

namespace wl {

// Mistral: Llama's tensors, a sliding window over every layer when set.
extern const Family kMistral{.model_type = "mistral", .architecture = "MistralForCausalLM", .window = Family::Window::All,
                           .gguf = {.name = "llama", .interleaved_rotary = true}};

}  // namespace wl
