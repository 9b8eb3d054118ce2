// MXFP4 (OCP microscaling): an E8M0 exponent e, then 16 bytes of E2M1 codes (low nibble element j,
// high nibble element j + 16). The table holds the E2M1 values doubled, so the scale is 2^(e - 128)
// (ggml_e8m0_to_fp32_half, subnormal for e < 2): scale * value.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

namespace {
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}
}  // namespace

void mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  const uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * kE2m1Floats[qs[j] & 0x0F];
    y[j + 16] = d * kE2m1Floats[qs[j] >> 4];
  }
}

}  // namespace wl::gguf::decoders
