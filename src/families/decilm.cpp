#include "families/family.hpp"

namespace wl {

// NVIDIA's Nemotron-NAS and DeciLM: Llama's tensors, per-layer widths from block_configs (two
// model_types, one class).
extern const Family kNemotronNas{.model_type = "nemotron-nas", .architecture = "DeciLMForCausalLM",
                                 .biases = Family::Biases::DeciLm, .mlp_bias = true, .decilm = true, .partial_rotary = true,
                                 .tensor_splits = splits::kDense};
extern const Family kDeci{.model_type = "deci", .architecture = "DeciLMForCausalLM", .biases = Family::Biases::DeciLm,
                          .mlp_bias = true, .decilm = true, .partial_rotary = true, .tensor_splits = splits::kDense};

}  // namespace wl
