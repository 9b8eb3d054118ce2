#include "families/family.hpp"

namespace wl {

// GLM-4 (0414): Llama's attention with q/k/v biases (attention_bias, on unless set; o_proj never),
// the leading partial_rotary_factor (0.5 unless set) of each head turning in adjacent pairs, four
// norms per block (each sublayer's input and output normalised), gate_up_proj stored fused (gate
// rows, then up rows). Not written as GGUF.
extern const Family kGlm4{.model_type = "glm4", .architecture = "Glm4ForCausalLM", .biases = Family::Biases::QkvDefault,
                          .attention_bias_default = true, .glm_norms = true, .rope_adjacent_pairs = true, .partial_rotary_factor = 0.5};

}  // namespace wl
