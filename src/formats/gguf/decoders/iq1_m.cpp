// IQ1_M: 32 bytes of grid indices (low 8 bits; 8 elements of kIq1sGrid each), 16 bytes qh (a nibble
// per index, low first: 3 index bits, then the sign of delta = 0.125), 4 u16 whose top nibbles
// together are the f16 d (u16 0 lowest) and whose low 12 bits hold sixteen 3-bit scales, one per
// 16 elements (bits 3(i % 4).. of u16 i / 4). Values: d * (2 scale + 1) * (grid + delta).
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq1_m(const uint8_t* b, float* y) {
  const uint8_t* qs = b;
  const uint8_t* qh = b + 32;
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = field_at<uint16_t>(b + 48 + 2 * i);
  const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = f16_bits_to_f32(d_bits);
  for (int k = 0; k < 32; ++k, y += 8) {
    const int si = k / 2;  // the scale of elements 16 si ..
    const float dl = d * static_cast<float>(2 * ((sc[si / 4] >> (3 * (si % 4))) & 7) + 1);
    const int h = (qh[k / 2] >> (4 * (k % 2))) & 0x0F;
    const float delta = h & 8 ? -0.125f : 0.125f;
    const int8_t* grid = kIq1sGrid[qs[k] | ((h & 7) << 8)];
    for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
  }
}

}  // namespace wl::gguf::decoders
