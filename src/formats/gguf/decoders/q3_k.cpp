// Q3_K: 32 bytes hmask, 64 bytes of 2-bit codes, 12 bytes of sixteen 6-bit scales, f16 d. Element
// e = 128g + 32s + m takes its low 2 bits from bits 2s..2s+1 of qs[32g + m] and subtracts 4 unless
// bit e / 32 of hmask[m] is set; scale i (of elements 16i..16i+15) is the low (i < 8) or high
// nibble of byte i % 8 with bits 2(i / 4)..2(i / 4)+1 of byte 8 + i % 4 above it, minus 32.
// Values: (d * scale) * q.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* packed = b + 96;
  const float d = f16_at(b + 108);
  int scales[16];
  q3_k_scales(packed, scales);
  for (int g = 0; g < 2; ++g, qs += 32) {
    for (int s = 0; s < 4; ++s) {
      const int bit = 4 * g + s;
      for (int half = 0; half < 2; ++half, y += 16) {
        const float dl = d * static_cast<float>(scales[8 * g + 2 * s + half]);
        for (int l = 0; l < 16; ++l) {
          const int m = 16 * half + l;
          const int q = ((qs[m] >> (2 * s)) & 3) - ((hmask[m] >> bit) & 1 ? 0 : 4);
          y[l] = dl * static_cast<float>(q);
        }
      }
    }
  }
}

}  // namespace wl::gguf::decoders
