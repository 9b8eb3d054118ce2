// Q5_1: f16 d, f16 m, u32 qh (bit j = fifth bit of element j), nibbles; unsigned x * d + m.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

namespace {
int q5_high(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }
}  // namespace

void q5_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const auto qh = field_at<uint32_t>(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) | q5_high(qh, j)) * d + m;
    y[j + 16] = static_cast<float>((qs[j] >> 4) | q5_high(qh, j + 16)) * d + m;
  }
}

}  // namespace wl::gguf::decoders
