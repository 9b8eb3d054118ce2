// Q4_0 as gguf-py quantises it: d = the signed value of the largest magnitude / -8, q =
// trunc(x / d + 8.5) clipped to 0..15 (ggml's C adds 8.5 too, then truncates the same way). Block:
// f16 d, then 16 bytes of nibbles, element j low and j + 16 high.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q4_0(const float* x, uint8_t* y) {
  const float d = signed_abs_max(x, 32) / -8.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = trunc_clip(x[j] * id + 8.5f, 15.0f);
  for (int j = 0; j < 16; ++j) y[2 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

}  // namespace wl::gguf::quantizers
