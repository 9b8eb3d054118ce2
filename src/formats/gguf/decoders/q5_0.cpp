// Q5_0: f16 d, u32 qh (bit j = fifth bit of element j), nibbles as Q4_0; x - 16 times d.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

namespace {
// The fifth bit of element j (0..31) from the 32-bit qh word, as 0 or 16.
int q5_high(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }
}  // namespace

void q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const auto qh = field_at<uint32_t>(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(((qs[j] & 0x0F) | q5_high(qh, j)) - 16) * d;
    y[j + 16] = static_cast<float>(((qs[j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
  }
}

}  // namespace wl::gguf::decoders
