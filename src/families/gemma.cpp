#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's converter writes the head sizes always.
constexpr GgufKey kGemmaGgufKeys[] = {{.suffix = "attention.key_length", .quantity = GgufQuantity::KeyLength},
                                      {.suffix = "attention.value_length", .quantity = GgufQuantity::ValueLength}};
}  // namespace

// Gemma: (1+w) RMSNorm, embeddings scaled by sqrt(hidden), GELU (tanh) from hidden_act (its legacy
// "gelu" meaning tanh too; hidden_activation, which transformers 5 no longer reads, ignored), tied head.
extern const Family kGemma{.model_type = "gemma", .architecture = "GemmaForCausalLM", .gemma_norms = true, .gelu_is_tanh = true,
                           .tied_by_default = true,
                           .tensor_splits = splits::kDense,
                           .gguf = {.name = "gemma", .norm_offset = 1, .keys = kGemmaGgufKeys, .tied_head = true}};

}  // namespace wl
