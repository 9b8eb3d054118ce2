// Q5_1 as gguf-py quantises it: d = (max - min) / 31, q = trunc((x - min) / d + 0.5) clipped to
// 0..31. Block: f16 d, f16 min, a little-endian u32 whose bit j is bit 4 of element j, then 16
// bytes of low nibbles, element j low and j + 16 high.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q5_1(const float* x, uint8_t* y) {
  float min, max;
  min_max(x, 32, min, max);
  const float d = (max - min) / 31.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  put_f16(y + 2, min);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = trunc_clip((x[j] - min) * id + 0.5f, 31.0f);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
  std::memcpy(y + 4, &qh, sizeof qh);
  for (int j = 0; j < 16; ++j) y[8 + j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + 16] << 4));
}

}  // namespace wl::gguf::quantizers
