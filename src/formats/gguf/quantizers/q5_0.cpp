// Q5_0 as gguf-py quantises it: d = the signed value of the largest magnitude / -16, q =
// trunc(x / d + 16.5) clipped to 0..31. Block: f16 d, a little-endian u32 whose bit j is bit 4 of
// element j, then 16 bytes of low nibbles, element j low and j + 16 high.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q5_0(const float* x, uint8_t* y) {
  const float d = signed_abs_max(x, 32) / -16.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = trunc_clip(x[j] * id + 16.5f, 31.0f);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
  std::memcpy(y + 2, &qh, sizeof qh);
  for (int j = 0; j < 16; ++j) y[6 + j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + 16] << 4));
}

}  // namespace wl::gguf::quantizers
