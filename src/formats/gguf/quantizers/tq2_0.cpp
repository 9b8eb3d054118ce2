// TQ2_0 as gguf-py quantises it: d = max|x|, each value x / d rounded half away from zero to
// -1, 0 or 1, stored as the code 0..2 in two bits. Block: 64 bytes, byte 32g + m holding elements
// 128g + 32p + m at bits 2p (p = 0..3); then f16 d.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void tq2_0(const float* x, uint8_t* y) {
  const float d = abs_max(x, 256);
  const float id = inverse_or_zero(d);
  uint8_t q[256];
  for (int j = 0; j < 256; ++j) q[j] = ternary(x[j] * id);
  for (int g = 0; g < 2; ++g)
    for (int m = 0; m < 32; ++m) {
      const uint8_t* e = q + 128 * g + m;
      y[32 * g + m] = static_cast<uint8_t>(e[0] | (e[32] << 2) | (e[64] << 4) | (e[96] << 6));
    }
  put_f16(y + 64, d);
}

}  // namespace wl::gguf::quantizers
