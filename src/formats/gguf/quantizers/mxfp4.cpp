// MXFP4 as gguf-py quantises it: the shared exponent e = floor(log2(max|x|)) - 2 + 127 (log2 in
// float32, as NumPy computes it; 0 for a block of zeros; wrapped to a byte as NumPy's astype does
// for the blocks below 2^-125), the scale s = 2^(e - 128) (ggml_e8m0_to_fp32_half), and each value
// the E2M1 code whose doubled value k gives the smallest |s * k - x| (the first such code in
// gguf-py's kvalues order: +0 before -0, the smaller magnitude on a tie). Block: e, then 16 bytes
// of codes, element j low and j + 16 high.
#include "formats/gguf/quantizers/quantizers.hpp"

namespace wl::gguf::quantizers {

namespace {

// gguf-py's MXFP4.kvalues: the E2M1 values doubled, in code order.
constexpr float kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// floor(log2(d)) - 2 + 127 as NumPy's float32 log2 gives it, wrapped to a byte: log2 in double
// rounded to float is the float32 log2 correctly rounded, which NumPy's equals in its floor for
// every positive float32 (checked over all of them).
uint8_t shared_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float l = static_cast<float>(std::log2(static_cast<double>(amax)));
  return static_cast<uint8_t>(static_cast<int>(std::floor(l)) + 125);
}

float e8m0_half(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23);
}

}  // namespace

void mxfp4(const float* x, uint8_t* y) {
  const uint8_t e = shared_exponent(abs_max(x, 32));
  const float s = e8m0_half(e);
  float sk[16];
  for (int k = 0; k < 16; ++k) sk[k] = s * kValues[k];
  float best[32];
  int32_t code[32];  // as wide as the floats, and selected by masks, so that the loop vectorises
  for (int j = 0; j < 32; ++j) best[j] = std::fabs(sk[0] - x[j]), code[j] = 0;
  for (int k = 1; k < 16; ++k) {
    const float level = sk[k];
    for (int j = 0; j < 32; ++j) {
      const float err = std::fabs(level - x[j]);
      const int32_t better = -static_cast<int32_t>(err < best[j]);  // all ones where err is smaller
      best[j] = err < best[j] ? err : best[j];
      code[j] = (code[j] & ~better) | (k & better);
    }
  }
  y[0] = e;
  for (int j = 0; j < 16; ++j) y[1 + j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
}

}  // namespace wl::gguf::quantizers
