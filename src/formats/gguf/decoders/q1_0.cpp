// Q1_0: f16 d, then 16 bytes of signs. Element j is bit j % 8 of byte j / 8: d when set, -d when not.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q1_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 128; ++j) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : -d;
}

}  // namespace wl::gguf::decoders
