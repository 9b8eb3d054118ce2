// The engine's elementwise steps, each as the families' transformers code computes it (in F32).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/engine/llama_config.hpp"

namespace wl {

// out = x / rms(x) * (offset + w): offset 1 for Gemma's (1 + w) norms, else 0; w null: x / rms(x).
// out may be x.
void rmsnorm(float* out, const float* x, const float* w, uint64_t n, float eps, float offset);

// hidden[i] = act(gate[i]) * up[i] for the config's hidden_act.
void gated_activation(const std::string& act, const float* gate, const float* up, float* hidden, uint64_t n);

// gpt-oss's clamped SwiGLU of one unit (transformers' GptOssExperts._apply_gate): the gate clamped
// above, the up both sides, then (up + 1) * gate * sigmoid(alpha * gate).
inline float clamped_swiglu(float gate, float up, const MoeConfig& moe) {
  const float limit = float(moe.swiglu_limit), alpha = float(moe.swiglu_alpha);
  gate = std::min(gate, limit);
  up = std::clamp(up, -limit, limit);
  return (up + 1.0f) * (gate / (1.0f + std::exp(-gate * alpha)));
}

// v = cap * tanh(v / cap), when cap > 0.
void soft_cap(float* v, uint64_t n, double cap);

}  // namespace wl
