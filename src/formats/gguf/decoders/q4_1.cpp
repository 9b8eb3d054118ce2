// Q4_1: f16 d, f16 m, nibbles as Q4_0, unsigned: x * d + m.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

}  // namespace wl::gguf::decoders
