// Q5_K: as Q4_K with 32 bytes qh between the scales and the nibbles: bit 2g of qh[l] is the fifth
// bit of element l of group g's first half, bit 2g + 1 of its second half.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q5_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  for (int g = 0; g < 4; ++g, q += 32, y += 64) {
    const auto [d1, m1, d2, m2] = k4_group_scales(d, dmin, scales, g);
    const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * g)), hi_bit = static_cast<uint8_t>(2u << (2 * g));
    for (int l = 0; l < 32; ++l)
      y[l] = d1 * static_cast<float>((q[l] & 0x0F) + ((qh[l] & lo_bit) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      y[32 + l] = d2 * static_cast<float>((q[l] >> 4) + ((qh[l] & hi_bit) ? 16 : 0)) - m2;
  }
}

}  // namespace wl::gguf::decoders
