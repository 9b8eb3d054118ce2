// Which experts a token goes to, and with what weights, as each family's transformers router
// decides it (Mixtral, Qwen2/3-MoE: softmax top-k; DeepSeek-V2: softmax, greedy or group-limited;
// DeepSeek-V3: sigmoid, a correction bias for choosing, the best groups by their best two; Llama 4:
// the top-k logits' sigmoids, not renormalised, which the engine multiplies into the chosen experts'
// inputs rather than their outputs: MoeConfig::weight_input).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "weightloader/engine/llama_config.hpp"

namespace wl {

struct ChosenExpert {
  uint64_t expert = 0;
  float weight = 0;
};

// The experts_per_token experts chosen for router `logits` ([num_experts]), highest score first
// (the lower index first among equals, as torch.topk), and their weights. `correction` is
// e_score_correction_bias ([num_experts]) when moe.score_correction_bias, else null. `logits` is
// overwritten with the scores.
std::vector<ChosenExpert> route_token(const MoeConfig& moe, std::span<float> logits, const float* correction);

}  // namespace wl
