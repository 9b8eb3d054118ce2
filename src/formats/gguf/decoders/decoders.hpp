// ggml's block types, one decoder function per type (one file each in this folder), registered by
// one line of list.inc. Each decodes one block into block_elems floats, value for value as ggml's
// dequantize_row_* and gguf-py's gguf.quants.dequantize compute them: the same float operations in
// the same order (f16 scales widened to f32 first, d * scale formed before it multiplies q).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/microscaling.hpp"
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

// Group g's (0..3) two halves of a Q4_K / Q5_K block: d * scale and dmin * min of sub-blocks 2g, 2g + 1.
struct K4GroupScales {
  float d1, m1, d2, m2;
};
inline K4GroupScales k4_group_scales(float d, float dmin, const uint8_t* scales, int g) {
  int sc, m;
  K4GroupScales out;
  k4_scale_min(2 * g, scales, sc, m);
  out.d1 = d * static_cast<float>(sc), out.m1 = dmin * static_cast<float>(m);
  k4_scale_min(2 * g + 1, scales, sc, m);
  out.d2 = d * static_cast<float>(sc), out.m2 = dmin * static_cast<float>(m);
  return out;
}

// Q3_K's sixteen signed 6-bit scales from its 12 packed bytes: scale i is the low (i < 8) or high
// nibble of byte i % 8 with bits 2(i / 4)..2(i / 4)+1 of byte 8 + i % 4 above it, minus 32.
inline void q3_k_scales(const uint8_t* packed, int* scales) {
  for (int i = 0; i < 16; ++i) {
    const int lo = (i < 8 ? packed[i] : packed[i - 8] >> 4) & 0x0F;
    const int hi = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = (lo | (hi << 4)) - 32;
  }
}

// The i-th 4-bit scale of bytes packed two per byte, low nibble first (the IQ2/IQ3 types).
inline int nibble_at(const uint8_t* scales, int i) { return (scales[i / 2] >> (4 * (i % 2))) & 0x0F; }

// The sixteen 4-bit codes of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl) and, doubled, of MXFP4 / NVFP4's
// E2M1 values (kvalues_mxfp4): ggml's int8 tables as floats (each exact), so a decoder looks the
// float up instead of converting it. An int8 table has no -0: adding +0 makes E2M1's -0 code +0.
inline constexpr float kIq4nlFloats[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
inline constexpr std::array<float, 16> kE2m1Floats = [] {
  std::array<float, 16> t{};
  for (size_t c = 0; c < t.size(); ++c) t[c] = 2 * mx::kE2m1[c] + 0.0f;
  return t;
}();

#define WL_GGML_DECODER(TYPE, fn) void fn(const uint8_t* block, float* out);
#include "formats/gguf/decoders/list.inc"
#undef WL_GGML_DECODER

}  // namespace wl::gguf::decoders
