#include "engine/engine_math.hpp"

#include <cmath>
#include <numbers>

namespace wl {

void rmsnorm(float* out, const float* x, const float* w, uint64_t n, float eps, float offset) {
  float ss = 0;
  for (uint64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
  for (uint64_t i = 0; i < n; ++i) out[i] = (offset + w[i]) * (scale * x[i]);
}

std::vector<float> rotary_frequencies(const LlamaConfig& c) {
  const uint64_t dims = c.rotary_dims();
  const RopeScaling& r = c.rope_scaling;
  std::vector<float> freq(dims / 2);
  for (uint64_t j = 0; j < dims / 2; ++j) {
    float f = 1.0f / std::pow(float(c.rope_theta), float(2 * j) / float(dims));
    if (r.type == "linear") {
      f /= float(r.factor);
    } else if (r.type == "llama3") {
      // Llama 3.1: long wavelengths slow down by `factor`, short ones keep theirs, and the band
      // between blends the two.
      const double old_context = double(r.original_max_position_embeddings);
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > old_context / r.low_freq_factor) {
        f /= float(r.factor);
      } else if (wavelen >= old_context / r.high_freq_factor) {
        const double smooth = (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = float((1 - smooth) * f / r.factor + smooth * f);
      }
    }
    freq[j] = f;
  }
  return freq;
}

void rope(float* v, uint64_t heads, uint64_t hd, const std::vector<float>& cos, const std::vector<float>& sin) {
  const uint64_t half = cos.size();
  for (uint64_t h = 0; h < heads; ++h, v += hd)
    for (uint64_t j = 0; j < half; ++j) {
      const float a = v[j], b = v[j + half];
      v[j] = a * cos[j] - b * sin[j];
      v[j + half] = a * sin[j] + b * cos[j];
    }
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
