// IQ2_XXS: f16 d, then eight groups of 32 elements of two u32 each: the first holds four grid
// indices (one byte each, 8 elements from kIq2xxsGrid), the second four 7-bit sign indices (bits
// 7l..7l+6, into kIqSigns) and a 4-bit scale (bits 28..31). Values:
// d * (0.5 + scale) * 0.25 * grid * sign.
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq2_xxs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib, qs += 8) {
    const auto aux = field_at<uint32_t>(qs + 4);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint8_t* grid = kIq2xxsGrid[qs[l]];
      const uint8_t signs = kIqSigns[(aux >> (7 * l)) & 127];
      for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid[j]) * sign_of(signs, j);
    }
  }
}

}  // namespace wl::gguf::decoders
