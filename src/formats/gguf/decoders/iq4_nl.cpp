// IQ4_NL: f16 d, 16 bytes of 4-bit codes into the non-linear table kIq4nlFloats; element j is the
// low nibble of byte j, element j + 16 the high: d * value.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void iq4_nl(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * kIq4nlFloats[qs[j] & 0x0F];
    y[j + 16] = d * kIq4nlFloats[qs[j] >> 4];
  }
}

}  // namespace wl::gguf::decoders
