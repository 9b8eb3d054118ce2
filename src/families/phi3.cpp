#include "families/family.hpp"

namespace wl {

namespace {
// Stored as they are: attn_qkv, and gate then up rows in ffn_up.
constexpr GgufArchitecture::Stem kPhi3GgufStems[] = {{"self_attn.qkv_proj", "attn_qkv"}, {"mlp.gate_up_proj", "ffn_up"}};
}  // namespace

// Phi-3: fused qkv_proj and gate_up_proj stored, partial rotary, longrope, a window on every layer.
extern const Family kPhi3{.model_type = "phi3", .architecture = "Phi3ForCausalLM", .window = Family::Window::All,
                          .gguf = {.name = "phi3", .layer_stems = kPhi3GgufStems}};

}  // namespace wl
