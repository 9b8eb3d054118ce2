// MXFP4 (OCP microscaling): an E8M0 exponent e, then 16 bytes of E2M1 codes (low nibble element j,
// high nibble element j + 16). The table holds the E2M1 values doubled, so the scale is 2^(e - 128)
// (ggml_e8m0_to_fp32_half, subnormal for e < 2; 0xFF is 2^127, not NaN): scale * value.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

void mxfp4(const uint8_t* b, float* y) {
  const float d = mx::exp2i(b[0] - 128);  // ggml_e8m0_to_fp32_half
  const uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * kE2m1Floats[qs[j] & 0x0F];
    y[j + 16] = d * kE2m1Floats[qs[j] >> 4];
  }
}

}  // namespace wl::gguf::decoders
