#include "families/granite_gguf.hpp"

namespace wl {

// IBM Granite 3: Llama with multipliers (embeddings, attention scores, each block's output) and
// logits divided by logits_scaling. llama.cpp's granite is its llama (q/k rows interleaved) with
// the multipliers as {embedding,residual,logit}_scale and attention.scale.
extern const Family kGranite{.model_type = "granite", .architecture = "GraniteForCausalLM", .mlp_bias = true,
                             .multipliers = true, .tensor_splits = splits::kDense,
                             .gguf = {.name = "granite", .interleaved_rotary = true, .keys = kGraniteGgufKeys}};

}  // namespace wl
