#include "engine/engine_math.hpp"

#include <cmath>
#include <numbers>

namespace wl {

void rmsnorm(float* out, const float* x, const float* w, uint64_t n, float eps, float offset) {
  float ss = 0;
  for (uint64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
  if (!w) {  // Llama 4's L2 norm of q and k: no weight
    for (uint64_t i = 0; i < n; ++i) out[i] = scale * x[i];
    return;
  }
  for (uint64_t i = 0; i < n; ++i) out[i] = (offset + w[i]) * (scale * x[i]);
}

void gated_activation(const std::string& act, const float* gate, const float* up, float* hidden, uint64_t n) {
  if (act == "silu") {
    for (uint64_t i = 0; i < n; ++i) hidden[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  } else if (act == "gelu") {
    for (uint64_t i = 0; i < n; ++i) hidden[i] = 0.5f * gate[i] * (1.0f + std::erf(gate[i] * float(std::numbers::sqrt2 / 2))) * up[i];
  } else {  // gelu_pytorch_tanh
    const float k = float(std::sqrt(2 / std::numbers::pi));
    for (uint64_t i = 0; i < n; ++i) {
      const float g = gate[i];
      hidden[i] = 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
    }
  }
}

void soft_cap(float* v, uint64_t n, double cap) {
  if (cap <= 0) return;
  const float c = float(cap);
  for (uint64_t i = 0; i < n; ++i) v[i] = c * std::tanh(v[i] / c);
}

}  // namespace wl
