// IQ3_XXS: f16 d, 64 bytes of indices into kIq3xxsGrid (4 elements each), then one u32 per group of
// 32 elements: four 7-bit sign indices (bits 7l..7l+6, into kIqSigns, 8 elements each) and a 4-bit
// scale (bits 28..31). Values: d * (0.5 + scale) * 0.5 * grid * sign.
#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/decoders/iq_tables.hpp"

namespace wl::gguf::decoders {

void iq3_xxs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  const uint8_t* scales_signs = b + 66;
  for (int ib = 0; ib < 8; ++ib, qs += 8) {
    const auto aux = field_at<uint32_t>(scales_signs + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint8_t signs = kIqSigns[(aux >> (7 * l)) & 127];
      const uint8_t* grid1 = kIq3xxsGrid[qs[2 * l]];
      const uint8_t* grid2 = kIq3xxsGrid[qs[2 * l + 1]];
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(grid1[j]) * sign_of(signs, j);
        y[j + 4] = db * static_cast<float>(grid2[j]) * sign_of(signs, j + 4);
      }
    }
  }
}

}  // namespace wl::gguf::decoders
