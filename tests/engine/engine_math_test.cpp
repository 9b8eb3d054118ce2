// The engine's elementwise steps: activations, soft-caps, norms.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "engine/engine_math.hpp"

namespace wl {
namespace {

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
