// gpt-oss's stacked experts on hand-made weights: x @ W in every stored dtype, and the clamped
// SwiGLU with gate and up interleaved, as transformers' GptOssExperts computes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/stacked_experts.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {
namespace {

std::vector<std::byte> stored(const std::vector<float>& v, DType dtype) {
  std::vector<std::byte> out(v.size() * dtype_size(dtype));
  convert(DType::F32, v.data(), dtype, out.data(), v.size());
  return out;
}

TEST(StackedExperts, TransposedProductInEveryDtype) {
  ThreadPool pool(2);
  const uint64_t rows = 3, cols = 600;  // more columns than one task takes
  std::vector<float> w(rows * cols), x{0.5f, -1.0f, 2.0f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.25f;  // exact in BF16 and F16
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    const std::vector<std::byte> bytes = stored(w, dtype);
    std::vector<float> y(cols, -9.0f);
    matvec_transposed(pool, bytes.data(), dtype, rows, cols, x.data(), y.data());
    for (uint64_t c = 0; c < cols; ++c) {
      float want = 0;
      for (uint64_t r = 0; r < rows; ++r) want += x[r] * w[r * cols + c];
      ASSERT_FLOAT_EQ(y[c], want) << dtype_name(dtype) << " column " << c;
    }
  }
}

TEST(StackedExperts, ClampedSwigluWithInterleavedGateAndUp) {
  // Two experts of hidden 2 and 2 units; expert 1 is run. Its gate_up is the identity on the
  // first two columns (unit 0's gate and up) and 2x on the next two (unit 1's), plus biases.
  ThreadPool pool(1);
  MoeConfig moe;
  moe.swiglu_limit = 1.0, moe.swiglu_alpha = 1.702;
  const uint64_t D = 2, U = 2;
  std::vector<float> gate_up(2 * D * 2 * U, 0.0f), gate_up_bias(2 * 2 * U, 0.0f), down(2 * U * D, 0.0f), down_bias(2 * D, 0.0f);
  float* g1 = gate_up.data() + D * 2 * U;  // expert 1: [hidden, 2 units]
  g1[0 * 4 + 0] = 1, g1[1 * 4 + 1] = 1, g1[0 * 4 + 2] = 2, g1[1 * 4 + 3] = 2;
  float* b1 = gate_up_bias.data() + 2 * U;
  b1[1] = 0.25f;
  float* d1 = down.data() + U * D;  // [units, hidden]: unit 0 to output 0, unit 1 to output 1
  d1[0 * D + 0] = 1, d1[1 * D + 1] = 1;
  down_bias[1 * D + 0] = 0.5f;
  const std::vector<float> x{3.0f, -0.5f};
  const StackedExperts s{reinterpret_cast<const std::byte*>(gate_up.data()), reinterpret_cast<const std::byte*>(down.data()),
                         gate_up_bias.data(), down_bias.data(), U};
  std::vector<float> scratch(2 * U), act(U), out(D);
  run_stacked_expert(pool, s, 1, DType::F32, D, moe, x.data(), scratch.data(), act.data(), out.data());
  auto unit = [&](float gate, float up) {
    gate = std::min(gate, 1.0f), up = std::clamp(up, -1.0f, 1.0f);
    return (up + 1) * gate / (1 + std::exp(-1.702f * gate));
  };
  EXPECT_FLOAT_EQ(out[0], unit(3.0f, -0.25f) + 0.5f);  // gate 3 clamped to 1; up -0.5 + 0.25
  EXPECT_FLOAT_EQ(out[1], unit(6.0f, -1.0f));          // up -1: the unit gives nothing
}

TEST(StackedExperts, Llama4HalvesGateThenUp) {
  // Two experts of hidden 2 and 2 units stacked [hidden, gate units | up units]; expert 1 is run,
  // read as one stack (stride 4) and as its two halves apart (stride 2), as the ranks hold them, in
  // every stored dtype (the weights are exact in each).
  ThreadPool pool(1);
  const uint64_t D = 2, U = 2;
  std::vector<float> gate_up(2 * D * 2 * U, 0.0f), down(2 * U * D, 0.0f);
  float* g1 = gate_up.data() + D * 2 * U;
  g1[0 * 4 + 0] = 1, g1[1 * 4 + 1] = 1;  // gate = x
  g1[0 * 4 + 2] = 2, g1[1 * 4 + 3] = -1;  // up = (2 x0, -x1)
  float* d1 = down.data() + U * D;
  d1[0 * D + 1] = 1, d1[1 * D + 0] = 3;  // unit 0 to output 1, unit 1 to output 0 (x3)
  const std::vector<float> x{0.5f, -2.0f};
  auto silu = [](float v) { return v / (1 + std::exp(-v)); };
  const float unit0 = silu(0.5f) * 1.0f, unit1 = silu(-2.0f) * 2.0f;
  std::vector<float> gate(2 * D * U), up(2 * D * U);  // the halves apart, as a split rank holds them
  for (uint64_t e = 0; e < 2; ++e)
    for (uint64_t r = 0; r < D; ++r)
      for (uint64_t u = 0; u < U; ++u) {
        gate[(e * D + r) * U + u] = gate_up[(e * D + r) * 2 * U + u];
        up[(e * D + r) * U + u] = gate_up[(e * D + r) * 2 * U + U + u];
      }
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    const std::vector<std::byte> whole = stored(gate_up, dtype), g = stored(gate, dtype), u = stored(up, dtype), d = stored(down, dtype);
    StackedExperts one{}, apart{};
    one.down = apart.down = d.data();
    one.units = apart.units = U;
    one.gate = whole.data(), one.up = whole.data() + U * dtype_size(dtype), one.columns = 2 * U;
    apart.gate = g.data(), apart.up = u.data(), apart.columns = U;
    for (const StackedExperts* s : {&one, &apart}) {
      std::vector<float> scratch(2 * U), act(U), out(D);
      run_stacked_halves_expert(pool, *s, 1, dtype, D, "silu", x.data(), scratch.data(), act.data(), out.data());
      EXPECT_FLOAT_EQ(out[0], 3 * unit1) << dtype_name(dtype);
      EXPECT_FLOAT_EQ(out[1], unit0) << dtype_name(dtype);
    }
  }
}

}  // namespace
}  // namespace wl
