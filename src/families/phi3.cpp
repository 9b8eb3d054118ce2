#include "families/family.hpp"

namespace wl {

// Phi-3: fused qkv_proj and gate_up_proj stored, partial rotary, longrope, a window on every layer.
extern const Family kPhi3{.model_type = "phi3", .architecture = "Phi3ForCausalLM", .window = Family::Window::All};

}  // namespace wl
