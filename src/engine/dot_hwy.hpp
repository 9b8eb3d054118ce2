// Dot products of BF16 or F16 weight rows with an F32 vector, widening in registers (Highway, run-time
// dispatch): half the bytes of F32 weights cross the memory bus, and nothing is widened through memory.
#pragma once

#include <cstdint>

#include "weightloader/dtype.hpp"

namespace wl {

// y[r] = dot(w[r, :], x) for r in [0, rows); `dtype` is BF16 or F16.
void dot_rows_half(DType dtype, const void* w, uint64_t rows, uint64_t cols, const float* x, float* y);

}  // namespace wl
