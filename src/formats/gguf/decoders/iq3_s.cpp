// IQ3_S: f16 d, 64 bytes of indices into kIq3sGrid (4 elements each; bit k % 8 of qh[k / 8] is index
// k's ninth bit), 8 bytes qh, 32 bytes of signs (one bit per element), 4 bytes of 4-bit scales (one
// per 32 elements, low nibble first). Values: d * (1 + 2 scale) * grid * sign.
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq3_s(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  const uint8_t* qh = b + 66;
  const uint8_t* signs = b + 74;
  const uint8_t* scales = b + 106;
  for (int k = 0; k < 64; ++k, y += 4) {
    const int ib = k / 8;
    const int ls = nibble_at(scales, ib);
    const float db = d * static_cast<float>(1 + 2 * ls);
    const uint8_t* grid = kIq3sGrid[qs[k] | (((qh[k / 8] >> (k % 8)) & 1) << 8)];
    const int e = 4 * k;  // the first element; its sign bit is bit e % 8 of signs[e / 8]
    for (int j = 0; j < 4; ++j) y[j] = db * static_cast<float>(grid[j]) * sign_of(signs[e / 8], e % 8 + j);
  }
}

}  // namespace wl::gguf::decoders
