#include "families/family.hpp"

namespace wl {

// OLMo 2: Llama's tensors, but each sublayer's output is normalised (post_attention_layernorm,
// post_feedforward_layernorm) instead of its input, and q and k are normalised over the whole
// projection (q_norm: [heads * head_dim]).
extern const Family kOlmo2{.model_type = "olmo2", .architecture = "Olmo2ForCausalLM", .post_norms_only = true,
                           .qk_norm_whole = true};

}  // namespace wl
