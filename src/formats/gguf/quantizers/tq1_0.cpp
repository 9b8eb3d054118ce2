// TQ1_0 as gguf-py quantises it: d = max|x|, each value x / d rounded half away from zero to
// -1, 0 or 1, as the digit 0..2. Five digits (four in qh) make a base-3 number v, first digit
// most significant, stored as the fixed-point fraction ceil(v * 256 / 243) that the decoder reads
// digit by digit. Block: qs[0..31] from elements 32p + m (p = 0..4), qs[32..47] from
// 160 + 16p + m, qh[0..3] from 240 + 4p + m (p = 0..3, then a zero digit); then f16 d.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

namespace {

// Digits e[0], e[stride], ... (n of them, then 5 - n zeros) as one byte.
uint8_t pack5(const uint8_t* e, int stride, int n) {
  unsigned v = 0;
  for (int p = 0; p < 5; ++p) v = v * 3 + (p < n ? e[p * stride] : 0);
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void tq1_0(const float* x, uint8_t* y) {
  const float d = abs_max(x, 256);
  const float id = inverse_or_zero(d);
  uint8_t q[256];
  for (int j = 0; j < 256; ++j) q[j] = ternary(x[j] * id);
  for (int m = 0; m < 32; ++m) y[m] = pack5(q + m, 32, 5);
  for (int m = 0; m < 16; ++m) y[32 + m] = pack5(q + 160 + m, 16, 5);
  for (int m = 0; m < 4; ++m) y[48 + m] = pack5(q + 240 + m, 4, 4);
  put_f16(y + 52, d);
}

}  // namespace wl::gguf::quantizers
