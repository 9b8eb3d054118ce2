// IQ2_XS: f16 d, 32 u16 (a 9-bit index into kIq2xsGrid, 8 elements, and a 7-bit sign index above
// it), 8 bytes of 4-bit scales (one per 16 elements, low nibble first). Values:
// d * (0.5 + scale) * 0.25 * grid * sign.
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq2_xs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  const uint8_t* scales = b + 66;
  for (int k = 0; k < 32; ++k, y += 8) {
    const int s = k / 2;
    const int ls = nibble_at(scales, s);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
    const auto q = field_at<uint16_t>(qs + 2 * k);
    const uint8_t* grid = kIq2xsGrid[q & 511];
    const uint8_t signs = kIqSigns[q >> 9];
    for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid[j]) * sign_of(signs, j);
  }
}

}  // namespace wl::gguf::decoders
