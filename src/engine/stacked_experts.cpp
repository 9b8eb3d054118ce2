#include "engine/stacked_experts.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/engine_math.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {

namespace {

constexpr uint64_t kColumnsPerTask = 256;

}  // namespace

void matvec_transposed(ThreadPool& pool, const std::byte* w, DType dtype, uint64_t rows, uint64_t cols, const float* x, float* y,
                       uint64_t stride) {
  if (!stride) stride = cols;
  const uint64_t tasks = (cols + kColumnsPerTask - 1) / kColumnsPerTask;
  const size_t elem = dtype_size(dtype);
  pool.run(tasks, [&](size_t t) {
    const uint64_t c0 = t * kColumnsPerTask, n = std::min(cols, c0 + kColumnsPerTask) - c0;
    if (dtype == DType::F32) {
      cblas_sgemv(CblasRowMajor, CblasTrans, int(rows), int(n), 1.0f, reinterpret_cast<const float*>(w) + c0, int(stride), x, 1, 0.0f,
                  y + c0, 1);
      return;
    }
    thread_local std::vector<float> row;
    row.resize(n);
    float* out = y + c0;
    std::fill(out, out + n, 0.0f);
    for (uint64_t r = 0; r < rows; ++r) {
      convert(dtype, w + (r * stride + c0) * elem, DType::F32, row.data(), n);
      const float xr = x[r];
      for (uint64_t j = 0; j < n; ++j) out[j] += xr * row[j];
    }
  });
}

void run_stacked_expert(ThreadPool& pool, const StackedExperts& s, uint64_t e, DType dtype, uint64_t hidden, const MoeConfig& moe,
                        const float* x, float* gate_up, float* act, float* out) {
  const uint64_t U = s.units, size = dtype_size(dtype);
  matvec_transposed(pool, s.gate_up + e * hidden * 2 * U * size, dtype, hidden, 2 * U, x, gate_up);
  const float* bias = s.gate_up_bias + e * 2 * U;
  for (uint64_t u = 0; u < U; ++u) act[u] = clamped_swiglu(gate_up[2 * u] + bias[2 * u], gate_up[2 * u + 1] + bias[2 * u + 1], moe);
  matvec_transposed(pool, s.down + e * U * hidden * size, dtype, U, hidden, act, out);
  if (s.down_bias)
    for (uint64_t j = 0; j < hidden; ++j) out[j] += s.down_bias[e * hidden + j];
}

void run_stacked_halves_expert(ThreadPool& pool, const StackedExperts& s, uint64_t e, DType dtype, uint64_t hidden,
                               const std::string& hidden_act, const float* x, float* gate_up, float* act, float* out) {
  const uint64_t U = s.units, size = dtype_size(dtype), slot = e * hidden * s.columns * size;
  matvec_transposed(pool, s.gate + slot, dtype, hidden, U, x, gate_up, s.columns);
  matvec_transposed(pool, s.up + slot, dtype, hidden, U, x, gate_up + U, s.columns);
  gated_activation(hidden_act, gate_up, gate_up + U, act, U);
  matvec_transposed(pool, s.down + e * U * hidden * size, dtype, U, hidden, act, out);
}

}  // namespace wl
