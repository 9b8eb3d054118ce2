// The engine's elementwise steps, each as the families' transformers code computes it (in F32).
#pragma once

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

// v = cap * tanh(v / cap), when cap > 0.
void soft_cap(float* v, uint64_t n, double cap);

}  // namespace wl
