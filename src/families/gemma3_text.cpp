#include "families/family.hpp"

namespace wl {

namespace {
// Gemma 2's norms and the q/k norms, every norm stored as 1 + w (llama.cpp's converter).
constexpr GgufArchitecture::Stem kGemma3GgufStems[] = {{"post_attention_layernorm", "post_attention_norm"},
                                                       {"pre_feedforward_layernorm", "ffn_norm"},
                                                       {"post_feedforward_layernorm", "post_ffw_norm"},
                                                       {"self_attn.q_norm", "attn_q_norm"},
                                                       {"self_attn.k_norm", "attn_k_norm"}};
// llama.cpp's Gemma 3 at c392e509 turns the sliding layers with base 10000, whatever the file says.
constexpr GgufKey kGemma3GgufKeys[] = {
    {.suffix = "attention.key_length", .quantity = GgufQuantity::KeyLength},
    {.suffix = "attention.value_length", .quantity = GgufQuantity::ValueLength},
    {.suffix = "attention.sliding_window", .quantity = GgufQuantity::SlidingWindow, .required = true},
    {.suffix = "rope.freq_base_swa", .quantity = GgufQuantity::SlidingRopeFreqBase, .write = GgufKey::Write::Never, .absent = 10000}};
constexpr std::string_view kGemma3Unsupported[] = {"use_bidirectional_attention"};
}  // namespace

// Gemma 3's text model: Gemma 2's norms and scalar (no soft-caps in the released models; transformers
// applies the final one only), q/k normalised per head with (1+w), five sliding layers to one global
// (layer_types), each kind with its own rope base (rope_parameters per layer type, 1e6 and 1e4 unless
// set; transformers 4: rope_theta and rope_local_base_freq). Bidirectional attention (EmbeddingGemma's) is not run.
// Gemma 3 from 4B up is Gemma3ForConditionalGeneration: this language model beside a vision tower.
extern const Family kGemma3Text{.model_type = "gemma3_text", .architecture = "Gemma3ForCausalLM",
                                .window = Family::Window::Listed, .follows_layer_types = true, .gemma_norms = true,
                                .activation_key = "hidden_activation", .gemma2 = true,
                                .unsupported_flags = kGemma3Unsupported, .qk_norm = true, .tied_by_default = true,
                                .rope_theta_default = 1e6, .sliding_rope_theta_default = 1e4,
                                .tensor_splits = splits::kDenseQkNorm,
                                .multimodal = {"gemma3", "Gemma3ForConditionalGeneration"},
                                .gguf = {.name = "gemma3", .layer_stems = kGemma3GgufStems, .norm_offset = 1, .keys = kGemma3GgufKeys,
                                         .tied_head = true, .global_every = 6, .hidden_query_scale_layers = 62}};

}  // namespace wl
