#include "families/family.hpp"

namespace wl {

namespace {
// Stored as they are: attn_qkv, and gate then up rows in ffn_up.
constexpr GgufArchitecture::Stem kPhi3GgufStems[] = {{"self_attn.qkv_proj", "attn_qkv"}, {"mlp.gate_up_proj", "ffn_up"}};
// Its partial rotary as the dimension count (which llama.cpp's converter leaves at head_dim,
// ignoring partial_rotary_factor: a partial one is refused by the read-back).
constexpr GgufKey kPhi3GgufKeys[] = {{.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
                                     {.suffix = "attention.sliding_window", .quantity = GgufQuantity::SlidingWindow}};
}  // namespace

// Phi-3: fused qkv_proj and gate_up_proj stored, no biases, partial rotary, longrope (its configs'
// legacy su and yarn too, as transformers reads them), a window on every layer.
extern const Family kPhi3{.model_type = "phi3", .architecture = "Phi3ForCausalLM", .window = Family::Window::All,
                          .biases = Family::Biases::None, .rope_types_as_longrope = true, .partial_rotary = true,
                          .tensor_splits = splits::kDense,
                          .gguf = {.name = "phi3", .layer_stems = kPhi3GgufStems, .keys = kPhi3GgufKeys, .head_required = true}};

}  // namespace wl
