// ggml's block types, one decoder function per type (one file each in this folder), registered by
// one line of list.inc. Each decodes one block into block_elems floats, value for value as ggml's
// dequantize_row_* and gguf-py's gguf.quants.dequantize compute them: the same float operations in
// the same order (f16 scales widened to f32 first, d * scale formed before it multiplies q).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "weightloader/dtype_convert.hpp"

namespace wl::gguf::decoders {

static_assert(std::endian::native == std::endian::little, "block fields are read straight from memory");

// A little-endian field at p.
template <class T>
T field_at(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline float f16_at(const uint8_t* p) { return f16_bits_to_f32(field_at<uint16_t>(p)); }

// The 6-bit scale and min of sub-block j (0..7) packed in the 12 scale bytes of Q4_K / Q5_K:
// sub-blocks 0-3 in the low 6 bits of bytes j and j + 4; sub-blocks 4-7 take their low 4 bits
// from byte j + 4 (scale: low nibble, min: high nibble) and their top 2 bits from the top bits of
// bytes j - 4 (scale) and j (min).
inline void k4_scale_min(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The sixteen 4-bit codes of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl) and, doubled, of MXFP4 / NVFP4's
// E2M1 values (kvalues_mxfp4): ggml's int8 tables as floats (each exact), so a decoder looks the
// float up instead of converting it.
inline constexpr float kIq4nlFloats[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
inline constexpr float kE2m1Floats[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

#define WL_GGML_DECODER(TYPE, fn) void fn(const uint8_t* block, float* out);
#include "formats/gguf/decoders/list.inc"
#undef WL_GGML_DECODER

}  // namespace wl::gguf::decoders
