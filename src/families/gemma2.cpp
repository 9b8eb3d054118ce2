#include "families/family.hpp"

namespace wl {

namespace {
// Its post_attention_layernorm normalises the attention's output; the MLP has its own two norms.
constexpr GgufArchitecture::Stem kGemma2GgufStems[] = {{"post_attention_layernorm", "post_attention_norm"},
                                                       {"pre_feedforward_layernorm", "ffn_norm"},
                                                       {"post_feedforward_layernorm", "post_ffw_norm"}};
// llama.cpp's Gemma 2 always soft-caps (50 and 30 without the keys): no cap is not written, and so
// refused. Newer llama.cpp turns the sliding layers with rope.freq_base_swa when the file gives one:
// another than rope.freq_base is refused (the engine reads it from config.json only).
constexpr GgufKey kGemma2GgufKeys[] = {
    {.suffix = "attention.key_length", .quantity = GgufQuantity::KeyLength},
    {.suffix = "attention.value_length", .quantity = GgufQuantity::ValueLength},
    {.suffix = "attention.sliding_window", .quantity = GgufQuantity::SlidingWindow, .absent = 4096},
    {.suffix = "attn_logit_softcapping", .quantity = GgufQuantity::AttnLogitSoftcap, .write = GgufKey::Write::WhenSet, .absent = 50},
    {.suffix = "final_logit_softcapping", .quantity = GgufQuantity::FinalLogitSoftcap, .write = GgufKey::Write::WhenSet, .absent = 30},
    {.suffix = "rope.freq_base_swa", .quantity = GgufQuantity::SlidingRopeFreqBase, .write = GgufKey::Write::Never,
     .absent_as = GgufQuantity::RopeFreqBase, .absent_only = true}};
}  // namespace

// Gemma 2: Gemma's norms, plus four norms per block, soft-caps, query_pre_attn_scalar and a sliding
// window on every other layer.
extern const Family kGemma2{.model_type = "gemma2", .architecture = "Gemma2ForCausalLM",
                            .window = Family::Window::EveryOther, .follows_layer_types = true, .gemma_norms = true,
                            .activation_key = "hidden_activation", .gemma2 = true, .attn_softcap = true, .tied_by_default = true,
                            .tensor_splits = splits::kDense,
                            .gguf = {.name = "gemma2", .layer_stems = kGemma2GgufStems, .norm_offset = 1, .keys = kGemma2GgufKeys,
                                     .tied_head = true, .hidden_query_scale_layers = 46}};

}  // namespace wl
