#include "families/family.hpp"

namespace wl {

namespace {
constexpr GgufArchitecture::Stem kQwen3GgufStems[] = {{"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"}};
}  // namespace

// Qwen3: q and k normalised per head (RMSNorm over head_dim) before rope; attention_bias for q/k/v/o
// (off in every released model); Qwen2's sliding rule.
extern const Family kQwen3{.model_type = "qwen3", .architecture = "Qwen3ForCausalLM", .window = Family::Window::FromLayer,
                           .follows_layer_types = true, .qk_norm = true,
                           .tensor_splits = splits::kDenseQkNorm,
                           .gguf = {.name = "qwen3", .layer_stems = kQwen3GgufStems}};

}  // namespace wl
