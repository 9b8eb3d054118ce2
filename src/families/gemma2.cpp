#include "families/family.hpp"

namespace wl {

// Gemma 2: Gemma's norms, plus four norms per block, soft-caps, query_pre_attn_scalar and a sliding
// window on every other layer.
extern const Family kGemma2{.model_type = "gemma2", .architecture = "Gemma2ForCausalLM",
                            .window = Family::Window::EveryOther, .follows_layer_types = true, .gemma_norms = true,
                            .gemma2 = true, .tied_by_default = true};

}  // namespace wl
