// NVFP4: four unsigned E4M3 scales (bias 7; 0 and 0x7F read as 0), then 32 bytes of E2M1 codes:
// sub-block s (16 elements) uses bytes 8s..8s+7, low nibbles first, then high nibbles. The table
// holds the E2M1 values doubled, so the scale is halved: (E4M3 / 2) * value.
#include <cmath>

#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

namespace {
float ue4m3_half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0x0F, man = x & 7;
  const float raw = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return raw * 0.5f;
}
}  // namespace

void nvfp4(const uint8_t* b, float* y) {
  const uint8_t* qs = b + 4;
  for (int s = 0; s < 4; ++s, qs += 8, y += 16) {
    const float d = ue4m3_half(b[s]);
    for (int j = 0; j < 8; ++j) {
      y[j] = d * kE2m1Floats[qs[j] & 0x0F];
      y[j + 8] = d * kE2m1Floats[qs[j] >> 4];
    }
  }
}

}  // namespace wl::gguf::decoders
