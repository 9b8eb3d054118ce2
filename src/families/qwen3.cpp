#include "families/family.hpp"

namespace wl {

// Qwen3: q and k normalised per head (RMSNorm over head_dim) before rope; attention_bias for q/k/v/o
// (off in every released model); Qwen2's sliding rule.
extern const Family kQwen3{.model_type = "qwen3", .architecture = "Qwen3ForCausalLM", .window = Family::Window::FromLayer,
                           .follows_layer_types = true, .qk_norm = true};

}  // namespace wl
