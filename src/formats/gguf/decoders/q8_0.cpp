// Q8_0: f16 d, 32 int8.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

}  // namespace wl::gguf::decoders
