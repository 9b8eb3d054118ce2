#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's glm4 (gguf-py 0.19): the four norms under Gemma 2's GGUF names, gate_up_proj stored
// fused in ffn_up (its SwiGLU takes gate rows, then up rows); q/k rows as they are (llama.cpp turns
// adjacent pairs, as GLM-4 does), the rotary part as rope.dimension_count.
constexpr GgufArchitecture::Stem kGlm4GgufStems[] = {{"post_self_attn_layernorm", "post_attention_norm"},
                                                     {"post_attention_layernorm", "ffn_norm"},
                                                     {"post_mlp_layernorm", "post_ffw_norm"},
                                                     {"mlp.gate_up_proj", "ffn_up"}};
constexpr GgufKey kGlm4GgufKeys[] = {{.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount}};
}  // namespace

// GLM-4 (0414): Llama's attention with q/k/v biases (attention_bias, on unless set; o_proj never),
// the leading partial_rotary_factor (0.5 unless set) of each head turning in adjacent pairs, four
// norms per block (each sublayer's input and output normalised), gate_up_proj stored fused (gate
// rows, then up rows).
extern const Family kGlm4{.model_type = "glm4", .architecture = "Glm4ForCausalLM", .biases = Family::Biases::QkvDefault,
                          .glm_norms = true, .rope_adjacent_pairs = true, .partial_rotary = true,
                          .partial_rotary_factor = 0.5,
                          .tensor_splits = splits::kDense,
                          .gguf = {.name = "glm4", .layer_stems = kGlm4GgufStems, .keys = kGlm4GgufKeys}};

}  // namespace wl
