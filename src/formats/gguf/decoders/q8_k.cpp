// Q8_K: f32 d, 256 int8, 16 int16 sums of 16 (bsums, not needed to decode): d * q.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void q8_k(const uint8_t* b, float* y) {
  const auto d = field_at<float>(b);
  const auto* qs = reinterpret_cast<const int8_t*>(b + 4);
  for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(qs[j]);
}

}  // namespace wl::gguf::decoders
