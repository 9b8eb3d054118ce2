// The SIMD side of convert(): Highway kernels for the float formats that checkpoints use most.
#pragma once

#include <cstddef>

#include "weightloader/dtype.hpp"

namespace wl::detail {

// Converts between two different dtypes among F32, BF16, F16, F8_E4M3 and F8_E5M2 on the best SIMD target
// the CPU offers and returns true; returns false (and touches nothing) for any other pair.
// Bit-identical to convert_scalar, canonical NaNs included.
bool convert_simd(DType from, const void* src, DType to, void* dst, size_t count);

}  // namespace wl::detail
