#include "families/family.hpp"

namespace wl {

// Qwen2-MoE: Qwen2's attention, experts with a sigmoid-gated shared expert.
extern const Family kQwen2Moe{.model_type = "qwen2_moe", .architecture = "Qwen2MoeForCausalLM",
                              .window = Family::Window::FromLayer, .experts = Family::Experts::Qwen2Moe,
                              .biases = Family::Biases::QkvOnly, .follows_layer_types = true};

}  // namespace wl
