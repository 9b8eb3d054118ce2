// Q4_K: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles. Four groups of 64 elements: the
// first 32 are the low nibbles of 32 bytes (sub-block 2g), the next 32 the high nibbles (2g + 1).
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q4_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int g = 0; g < 4; ++g, q += 32, y += 64) {
    const auto [d1, m1, d2, m2] = k4_group_scales(d, dmin, scales, g);
    for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

}  // namespace wl::gguf::decoders
