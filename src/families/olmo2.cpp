#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's olmo2: the sublayers' output norms and the whole-projection q/k norms, no input norms.
constexpr GgufArchitecture::Stem kOlmo2GgufStems[] = {{"post_attention_layernorm", "post_attention_norm"},
                                                      {"post_feedforward_layernorm", "post_ffw_norm"},
                                                      {"self_attn.q_norm", "attn_q_norm"},
                                                      {"self_attn.k_norm", "attn_k_norm"}};
// q and k normalised over the whole projection.
constexpr SplitTable kOlmo2Splits[] = {splits::kEmbedding, splits::kAttention, splits::kQkNormWhole, splits::kMlp, splits::kHead};
}  // namespace

// OLMo 2: Llama's tensors, but each sublayer's output is normalised (post_attention_layernorm,
// post_feedforward_layernorm) instead of its input, and q and k are normalised over the whole
// projection (q_norm: [heads * head_dim]).
extern const Family kOlmo2{.model_type = "olmo2", .architecture = "Olmo2ForCausalLM", .post_norms_only = true,
                           .qk_norm_whole = true, .tensor_splits = kOlmo2Splits,
                           .gguf = {.name = "olmo2", .layer_stems = kOlmo2GgufStems}};

}  // namespace wl
