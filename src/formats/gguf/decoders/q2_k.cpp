// Q2_K: 16 scale bytes (low nibble: scale, high nibble: min of a 16-element sub-block), 64 bytes of
// 2-bit codes, f16 d, f16 dmin. Element 128g + 32s + m (g < 2, s < 4, m < 32) is bits 2s..2s+1 of
// byte 32g + m; sub-block e / 16 scales it: (d * scale) * q - dmin * min.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int g = 0; g < 2; ++g, qs += 32) {
    for (int s = 0; s < 4; ++s) {
      for (int half = 0; half < 2; ++half, y += 16) {
        const uint8_t sc = *scales++;
        const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
        const uint8_t* q = qs + 16 * half;
        for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>((q[l] >> (2 * s)) & 3) - ml;
      }
    }
  }
}

}  // namespace wl::gguf::decoders
