// IQ2_S: f16 d, 32 bytes of grid indices (low 8 bits), 32 bytes of signs (one bit per element),
// 8 bytes qh (bits 2(k % 4)..+1 of qh[k / 4]: index k's top 2 bits), 8 bytes of 4-bit scales (one per
// 16 elements, low nibble first). 8 elements per index from kIq2sGrid. Values:
// d * (0.5 + scale) * 0.25 * grid * sign.
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq2_s(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  const uint8_t* signs = b + 34;
  const uint8_t* qh = b + 66;
  const uint8_t* scales = b + 74;
  for (int k = 0; k < 32; ++k, y += 8) {
    const int s = k / 2;
    const int ls = nibble_at(scales, s);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
    const uint8_t* grid = kIq2sGrid[qs[k] | (((qh[k / 4] >> (2 * (k % 4))) & 3) << 8)];
    for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid[j]) * sign_of(signs[k], j);
  }
}

}  // namespace wl::gguf::decoders
