#include "families/family.hpp"

namespace wl {

// Qwen3-MoE: Qwen3's attention, experts without a shared one (top-k renormalised when norm_topk_prob).
extern const Family kQwen3Moe{.model_type = "qwen3_moe", .architecture = "Qwen3MoeForCausalLM",
                              .window = Family::Window::FromLayer, .experts = Family::Experts::Qwen3Moe,
                              .follows_layer_types = true, .qk_norm = true};

}  // namespace wl
