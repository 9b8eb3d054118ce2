#include "families/family.hpp"

namespace wl {

namespace {
// Its post_attention_layernorm normalises the attention's output; the MLP has its own two norms.
constexpr GgufArchitecture::Stem kGemma2GgufStems[] = {{"post_attention_layernorm", "post_attention_norm"},
                                                       {"pre_feedforward_layernorm", "ffn_norm"},
                                                       {"post_feedforward_layernorm", "post_ffw_norm"}};
}  // namespace

// Gemma 2: Gemma's norms, plus four norms per block, soft-caps, query_pre_attn_scalar and a sliding
// window on every other layer.
extern const Family kGemma2{.model_type = "gemma2", .architecture = "Gemma2ForCausalLM",
                            .window = Family::Window::EveryOther, .follows_layer_types = true, .gemma_norms = true,
                            .gemma2 = true, .tied_by_default = true,
                            .gguf = {.name = "gemma2", .layer_stems = kGemma2GgufStems, .norm_offset = 1}};

}  // namespace wl
