#include "families/family.hpp"

namespace wl {

// Gemma: (1+w) RMSNorm, embeddings scaled by sqrt(hidden), GELU (tanh) from hidden_activation, tied head.
extern const Family kGemma{.model_type = "gemma", .architecture = "GemmaForCausalLM", .gemma_norms = true, .tied_by_default = true,
                         .gguf = {.name = "gemma", .norm_offset = 1}};

}  // namespace wl
