// Element conversion between any two dtypes.
//
// Floats: round to nearest, ties to even; NaN stays NaN (sign kept), ±Inf stays ±Inf, subnormals
// are produced and consumed exactly. A NaN output is canonical: its sign, then the quiet bit alone
// as payload (F8_E4M3: S.1111.111). F8_E5M2 behaves like IEEE (overflow rounds to ±Inf).
// F8_E4M3 (the "FN" variant: no infinities, NaN = S.1111.111, max 448): finite values beyond
// the range saturate to ±448, ±Inf and NaN become NaN.
// Integers: float → integer truncates toward zero and saturates to the target's range, NaN → 0;
// integer → integer saturates; integer → float rounds to nearest even. BOOL reads as 0/1 and any
// non-zero value (NaN included) converts to true.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weightloader/dtype.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Converts `count` elements from `src` (of `from`) into `dst` (of `to`). `from == to` copies the
// bytes unchanged. Pointers need no alignment; src and dst must not overlap. Pairs among F32,
// BF16, F16, F8_E4M3 and F8_E5M2 run on Highway SIMD kernels (bit-identical to the scalar
// reference); everything else on the scalar reference.
WL_API void convert(DType from, const void* src, DType to, void* dst, size_t count);

// The scalar reference used by tests and for the rare pairs: exact and slow.
WL_API void convert_scalar(DType from, const void* src, DType to, void* dst, size_t count);

// Single-value helpers (scalar reference semantics).
WL_API float f16_bits_to_f32(uint16_t bits);
WL_API float bf16_bits_to_f32(uint16_t bits);
WL_API uint16_t f32_to_f16_bits(float value);
WL_API uint16_t f32_to_bf16_bits(float value);

}  // namespace wl
