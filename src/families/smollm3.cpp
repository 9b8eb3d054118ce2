#include "families/family.hpp"

namespace wl {

// SmolLM3: Llama whose every no_rope_layer_interval-th layer does not turn (no_rope_layers), tied
// head; sliding layers only where layer_types lists them; rope_theta 2e6 unless set.
extern const Family kSmolLM3{.model_type = "smollm3", .architecture = "SmolLM3ForCausalLM",
                             .window = Family::Window::Listed, .mlp_bias = true, .follows_layer_types = true,
                             .tied_by_default = true, .no_rope_layers = true, .rope_theta_default = 2e6,
                             .tensor_splits = splits::kDense};

}  // namespace wl
