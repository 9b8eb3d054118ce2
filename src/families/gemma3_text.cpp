#include "families/family.hpp"

namespace wl {

// Gemma 3's text model: Gemma 2's norms and scalar (no soft-caps in the released models), q/k
// normalised per head with (1+w), five sliding layers to one global (layer_types), each kind with
// its own rope base (rope_parameters per layer type; transformers 4: rope_local_base_freq).
extern const Family kGemma3Text{.model_type = "gemma3_text", .architecture = "Gemma3ForCausalLM",
                                .window = Family::Window::Listed, .follows_layer_types = true, .gemma_norms = true,
                                .gemma2 = true, .qk_norm = true, .tied_by_default = true};

}  // namespace wl
