#include "engine/rotary.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace wl {

namespace {

// base ** (2j / dims) for each frequency j (of ceil(dims / 2)), in F32 as torch computes it.
std::vector<float> exponents(double base, uint64_t dims) {
  std::vector<float> p((dims + 1) / 2);
  for (uint64_t j = 0; j < p.size(); ++j) p[j] = std::pow(float(base), float(2 * j) / float(dims));
  return p;
}

// Llama 3.1: long wavelengths slow down by `factor`, short ones keep theirs, and the band between blends the two.
float llama3(const RopeScaling& r, float f) {
  const double old_context = double(r.original_max_position_embeddings);
  const double wavelen = 2 * std::numbers::pi / f;
  if (wavelen > old_context / r.low_freq_factor) return f / float(r.factor);
  if (wavelen < old_context / r.high_freq_factor || r.high_freq_factor == r.low_freq_factor) return f;
  const double smooth = (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  return float((1 - smooth) * f / r.factor + smooth * f);
}

// YaRN: frequencies that turn fewer than beta_slow times over the original context are interpolated
// (divided by factor), those that turn more than beta_fast times kept, and a linear ramp blends the band.
std::vector<float> yarn(const RopeScaling& r, double base, uint64_t dims) {
  auto correction_dim = [&](double rotations) {
    return double(dims) * std::log(double(r.original_max_position_embeddings) / (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(base));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, double(dims - 1));
  if (low == high) high += 0.001;  // as transformers: no division by zero
  const std::vector<float> pos = exponents(base, dims);
  std::vector<float> f(pos.size());
  for (uint64_t j = 0; j < f.size(); ++j) {
    const float ramp = std::clamp((float(j) - float(low)) / float(high - low), 0.0f, 1.0f);
    const float keep = 1 - ramp;
    f[j] = 1.0f / (float(r.factor) * pos[j]) * (1 - keep) + 1.0f / pos[j] * keep;
  }
  return f;
}

}  // namespace

std::vector<float> rotary_frequencies(const LlamaConfig& c, uint64_t length, bool sliding) {
  const uint64_t dims = c.rotary_dims();
  sliding = sliding && c.sliding_rope_theta != 0;
  const RopeScaling& r = sliding ? c.sliding_rope_scaling : c.rope_scaling;
  const double theta = sliding ? c.sliding_rope_theta : c.rope_theta;
  if (r.type == "yarn") return yarn(r, theta, dims);
  double base = theta;
  if (r.type == "dynamic") {  // NTK-aware: a larger base once the sequence outgrows the trained context
    const double n = double(std::max(length, c.max_position_embeddings)), trained = double(c.max_position_embeddings);
    base *= std::pow(r.factor * n / trained - (r.factor - 1), double(dims) / double(dims - 2));
  }
  std::vector<float> f = exponents(base, dims);
  const std::vector<float>* divisors = nullptr;
  if (r.type == "longrope") divisors = length > r.original_max_position_embeddings ? &r.long_factor : &r.short_factor;
  for (uint64_t j = 0; j < f.size(); ++j) {
    f[j] = 1.0f / (divisors ? (*divisors)[j] * f[j] : f[j]);
    if (r.type == "linear") f[j] /= float(r.factor);
    if (r.type == "llama3") f[j] = llama3(r, f[j]);
  }
  return f;
}

float rotary_attention_factor(const LlamaConfig& c, bool sliding) {
  const RopeScaling& r = sliding && c.sliding_rope_theta != 0 ? c.sliding_rope_scaling : c.rope_scaling;
  return r.type == "yarn" || r.type == "longrope" ? float(r.attention_factor) : 1.0f;
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

void rope_adjacent_pairs(float* v, uint64_t heads, uint64_t stride, const std::vector<float>& cos, const std::vector<float>& sin) {
  for (uint64_t h = 0; h < heads; ++h, v += stride)
    for (uint64_t j = 0; j < cos.size(); ++j) {
      const float a = v[2 * j], b = v[2 * j + 1];
      v[2 * j] = a * cos[j] - b * sin[j];
      v[2 * j + 1] = b * cos[j] + a * sin[j];
    }
}

}  // namespace wl
