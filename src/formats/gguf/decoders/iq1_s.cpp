// IQ1_S: f16 d, 32 bytes of grid indices (low 8 bits; 8 elements of -1/0/1 from kIq1sGrid each),
// then one u16 per group of 32 elements: the indices' top 3 bits (bits 3t..3t+2 for index 4ib + t),
// a 3-bit scale (bits 12..14) and the sign of the offset delta = 0.125 (bit 15). Values:
// d * (2 scale + 1) * (grid + delta).
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq1_s(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    const auto qh = field_at<uint16_t>(b + 34 + 2 * ib);
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float delta = qh & 0x8000 ? -0.125f : 0.125f;
    for (int t = 0; t < 4; ++t, y += 8) {
      const int8_t* grid = kIq1sGrid[qs[4 * ib + t] | (((qh >> (3 * t)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
    }
  }
}

}  // namespace wl::gguf::decoders
