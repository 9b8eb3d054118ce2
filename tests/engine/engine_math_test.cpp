// The engine's elementwise steps: rope scaling's frequencies, activations, soft-caps, norms.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "engine/engine_math.hpp"

namespace wl {
namespace {

LlamaConfig rotary(uint64_t head_dim, double theta) {
  LlamaConfig c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  return c;
}

TEST(EngineMath, RopeScalingFrequencies) {
  // Llama 3.1 8B: theta 500000, head_dim 128, factor 8 over an original context of 8192.
  LlamaConfig c = rotary(128, 500000.0);
  const std::vector<float> plain = rotary_frequencies(c);
  c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  const std::vector<float> scaled = rotary_frequencies(c);
  ASSERT_EQ(scaled.size(), 64u);
  EXPECT_EQ(scaled[0], plain[0]);                          // wavelength 2*pi: under 8192 / 4, kept
  EXPECT_FLOAT_EQ(scaled[63], plain[63] / 8);              // longer than 8192: slowed by the factor
  const double wavelen = 2 * std::numbers::pi / plain[30];  // inside the band: a blend of both
  ASSERT_TRUE(wavelen > 2048 && wavelen < 8192) << wavelen;
  EXPECT_LT(scaled[30], plain[30]);
  EXPECT_GT(scaled[30], plain[30] / 8);
  c.rope_scaling = {"linear", 4.0};
  EXPECT_FLOAT_EQ(rotary_frequencies(c)[10], plain[10] / 4);
  // Partial rotary: frequencies over the rotary dimensions only.
  c = rotary(8, 10000.0);
  c.rotary_dim = 6;
  const std::vector<float> partial = rotary_frequencies(c);
  ASSERT_EQ(partial.size(), 3u);
  EXPECT_FLOAT_EQ(partial[1], float(std::pow(10000.0, -2.0 / 6)));
}

TEST(EngineMath, ActivationsSoftCapsAndOffsetNorms) {
  const float gate[2] = {1.0f, -2.0f}, up[2] = {2.0f, 1.0f};
  float out[2];
  gated_activation("silu", gate, up, out, 2);
  EXPECT_FLOAT_EQ(out[0], float(2 / (1 + std::exp(-1.0))));
  gated_activation("gelu", gate, up, out, 2);
  EXPECT_NEAR(out[0], 2 * 0.8413447460685429, 1e-6);  // x * Phi(x) at 1
  gated_activation("gelu_pytorch_tanh", gate, up, out, 2);
  EXPECT_NEAR(out[1], -0.04540230591222503, 1e-6);   // PyTorch's gelu(-2, approximate="tanh")
  float v[2] = {100.0f, -0.1f};
  soft_cap(v, 2, 5.0);
  EXPECT_NEAR(v[0], 5.0, 1e-5);
  EXPECT_NEAR(v[1], 5 * std::tanh(-0.02), 1e-7);
  const float x[2] = {3.0f, 4.0f}, w[2] = {0.0f, 1.0f};
  float n[2];
  rmsnorm(n, x, w, 2, 0.0f, 1.0f);  // Gemma: (1 + w)
  const float rms = std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(n[0], 3 / rms);
  EXPECT_FLOAT_EQ(n[1], 2 * 4 / rms);
}

}  // namespace
}  // namespace wl
