// Q4_1 as gguf-py quantises it: d = (max - min) / 15, q = trunc((x - min) / d + 0.5) clipped to
// 0..15. Block: f16 d, f16 min, then 16 bytes of nibbles, element j low and j + 16 high.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q4_1(const float* x, uint8_t* y) {
  float min, max;
  min_max(x, 32, min, max);
  const float d = (max - min) / 15.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  put_f16(y + 2, min);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = trunc_clip((x[j] - min) * id + 0.5f, 15.0f);
  for (int j = 0; j < 16; ++j) y[4 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

}  // namespace wl::gguf::quantizers
