#include "families/family.hpp"

namespace wl {

// Llama 1-3: attention_bias and mlp_bias optional, no sliding window.
extern const Family kLlama{.model_type = "llama", .architecture = "LlamaForCausalLM", .mlp_bias = true,
                         .gguf = {.name = "llama", .interleaved_rotary = true}};

}  // namespace wl
