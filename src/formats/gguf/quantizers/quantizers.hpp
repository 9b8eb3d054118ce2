// ggml's block types, one quantiser function per type (one file each in this folder), registered by
// one line of list.inc. Each turns one block of block_elems finite floats into the type's bytes,
// byte for byte as gguf-py's gguf.quants.quantize does: its NumPy code is the reference (where
// ggml's C differs, as Q4_0's truncation against quantize_row_q4_0_ref's rounding, gguf-py's
// float32 operations are the ones followed, in the same order). Scales are rounded to f16 the IEEE
// way (nearest, ties to even, overflow to infinity), as NumPy's astype(np.float16) does; values
// are quantised with the unrounded float32 scale, as gguf-py does.
//
// This folder is compiled with -ffp-contract=off (a fused multiply-add would round once where
// gguf-py rounds twice) and -fno-trapping-math (no floating-point traps: the selects and float to
// integer conversions below vectorise; no value changes).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "weightloader/dtype_convert.hpp"

namespace wl::gguf::quantizers {

static_assert(std::endian::native == std::endian::little, "block fields are written straight from memory");

// Stores `v` at p as an f16 (NumPy's astype(np.float16): nearest, ties to even).
inline void put_f16(uint8_t* p, float v) {
  const uint16_t bits = f32_to_f16_bits(v);
  std::memcpy(p, &bits, sizeof bits);
}

// The largest |x[j]| (+0 for a block of zeros): gguf-py's abs(blocks).max(). Compared as the
// magnitudes' bit patterns, which order finite floats as their values do, so that the loop is an
// integer max the compiler vectorises.
inline float abs_max(const float* x, int n) {
  int32_t m = 0;
  for (int j = 0; j < n; ++j) {
    const int32_t a = std::bit_cast<int32_t>(x[j]) & 0x7FFFFFFF;
    m = a > m ? a : m;
  }
  return std::bit_cast<float>(m);
}

// The first x[j] of the largest magnitude, with its sign: gguf-py's
// take_along_axis(blocks, abs(blocks).argmax()) (argmax takes the first of equal maxima).
inline float signed_abs_max(const float* x, int n) {
  const float amax = abs_max(x, n);
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) == amax) return x[j];
  return x[0];
}

// The smallest and largest x[j]: gguf-py's blocks.min() and blocks.max(). Where the extreme is a
// zero and the block holds both -0 and +0, NumPy's SIMD reduction picks the zero's sign by lane
// order; here it is the first one's (the values decoded are the same).
inline void min_max(const float* x, int n, float& min, float& max) {
  min = max = x[0];
  for (int j = 1; j < n; ++j) {
    min = x[j] < min ? x[j] : min;
    max = x[j] > max ? x[j] : max;
  }
}

// 1 / d, or 0 for d == 0 (gguf-py's np.where(d == 0, 0, 1 / d)).
inline float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Whether v is finite (written so that it vectorises).
inline bool finite(float v) { return v - v == 0.0f; }

// gguf-py's np.trunc(v).astype(np.uint8).clip(0, top) for the v the Q4 / Q5 types compute: finite
// scales keep v in [0, top + 2); a scale whose inverse overflows (a block of subnormals) makes v
// infinite or NaN, which NumPy's conversion to an integer turns into 0 (on x86), as here.
inline uint8_t trunc_clip(float v, float top) {
  if (!finite(v)) return 0;
  v = v < top ? v : top;
  v = v > 0.0f ? v : 0.0f;
  return static_cast<uint8_t>(static_cast<int>(v));
}

// gguf-py's np_roundf (halves away from zero: floor(|v|) + floor(2 (|v| - floor(|v|))), the sign
// put back) of a v with |v| < 2^31, as an integer; NaN or infinite v (a block of subnormals), which
// NumPy converts to the integer 0 (on x86): 0. Written with integer conversions, so that it
// vectorises where std::round would not.
inline int32_t round_away(float v) {
  const float a = std::fabs(v) < 0x1p31f ? std::fabs(v) : 0.0f;  // NaN and infinities: 0
  const auto whole = static_cast<int32_t>(a);
  const int32_t q = whole + (a - static_cast<float>(whole) >= 0.5f ? 1 : 0);  // a - whole is exact
  return v < 0.0f ? -q : q;
}

// A ternary digit as the code 0, 1 or 2: gguf-py's np_roundf (halves away from zero) of a
// v = x / max|x| in [-1, 1] (up to rounding), plus 1; a NaN or infinite v (a block of subnormals)
// rounds to NaN, which NumPy converts to 0 (on x86): code 1.
inline uint8_t ternary(float v) {
  if (!finite(v)) return 1;
  return v >= 0.5f ? 2 : v <= -0.5f ? 0 : 1;
}

#define WL_GGML_QUANTIZER(TYPE, fn, file_type, about) void fn(const float* x, uint8_t* block);
#include "formats/gguf/quantizers/list.inc"
#undef WL_GGML_QUANTIZER

}  // namespace wl::gguf::quantizers
