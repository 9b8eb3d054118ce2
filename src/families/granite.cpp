#include "families/family.hpp"

namespace wl {

// IBM Granite 3: Llama with multipliers (embeddings, attention scores, each block's output) and
// logits divided by logits_scaling.
extern const Family kGranite{.model_type = "granite", .architecture = "GraniteForCausalLM", .mlp_bias = true,
                             .multipliers = true};

}  // namespace wl
