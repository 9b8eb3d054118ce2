// Q4_0: f16 d, 16 bytes of nibbles; element j is the low nibble of byte j, element j + 16 the high.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

}  // namespace wl::gguf::decoders
