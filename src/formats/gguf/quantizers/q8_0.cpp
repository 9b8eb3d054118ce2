// Q8_0 as gguf-py (and ggml's quantize_row_q8_0_ref) quantise it: d = max|x| / 127, q = x / d
// rounded half away from zero. Block: f16 d, then 32 int8.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q8_0(const float* x, uint8_t* y) {
  const float d = abs_max(x, 32) / 127.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  for (int j = 0; j < 32; ++j) y[2 + j] = static_cast<uint8_t>(round_away(x[j] * id));
}

}  // namespace wl::gguf::quantizers
