#include "families/family.hpp"

namespace wl {

// SmolLM3: Llama whose every no_rope_layer_interval-th layer does not turn (no_rope_layers), tied
// head; sliding layers only where layer_types lists them.
extern const Family kSmolLM3{.model_type = "smollm3", .architecture = "SmolLM3ForCausalLM",
                             .window = Family::Window::Listed, .mlp_bias = true, .follows_layer_types = true,
                             .tied_by_default = true, .no_rope_layers = true};

}  // namespace wl
