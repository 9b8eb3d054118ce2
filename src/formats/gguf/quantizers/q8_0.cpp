// Q8_0 as gguf-py (and ggml's quantize_row_q8_0_ref) quantise it: d = max|x| / 127, q = x / d
// rounded half away from zero. Block: f16 d, then 32 int8.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

void q8_0(const float* x, uint8_t* y) {
  const float d = abs_max(x, 32) / 127.0f;
  const float id = inverse_or_zero(d);
  put_f16(y, d);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;  // |v| <= 127 up to rounding; NaN or infinite (subnormal blocks): 0
    y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(finite(v) ? std::round(v) : 0.0f));
  }
}

}  // namespace wl::gguf::quantizers
