// IQ4_XS: f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes of codes. Eight groups of 32 as IQ4_NL
// blocks, each with the 6-bit scale (low nibble of scales_l[ib / 2] for even ib, high for odd;
// bits 2ib..2ib+1 of scales_h above it) minus 32: (d * scale) * value.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void iq4_xs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const auto scales_h = field_at<uint16_t>(b + 2);
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * kIq4nlFloats[qs[j] & 0x0F];
      y[j + 16] = dl * kIq4nlFloats[qs[j] >> 4];
    }
  }
}

}  // namespace wl::gguf::decoders
