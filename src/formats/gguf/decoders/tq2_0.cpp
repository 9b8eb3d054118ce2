// TQ2_0: 64 bytes of 2-bit codes, f16 d. Element 128g + 32s + m is bits 2s..2s+1 of byte 32g + m;
// values (code - 1) * d.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void tq2_0(const uint8_t* b, float* y) {
  const float d = f16_at(b + 64);
  for (int g = 0; g < 2; ++g)
    for (int s = 0; s < 4; ++s)
      for (int m = 0; m < 32; ++m)
        y[128 * g + 32 * s + m] = static_cast<float>(((b[32 * g + m] >> (2 * s)) & 3) - 1) * d;
}

}  // namespace wl::gguf::decoders
