// TQ1_0: ternary digits packed five (qs, 48 bytes) or four (qh, 4 bytes) to a byte as a fixed-point
// fraction of 3^5: digit p of byte x is (uint8(x * 3^p) * 3) >> 8; then f16 d. Element order:
// the 32 bytes qs[0..31] give elements 32p + m, the 16 bytes qs[32..47] elements 160 + 16p + m,
// the 4 bytes of qh elements 240 + 4p + m. Values: (digit - 1) * d.
#include "formats/gguf/decoders/decoders.hpp"

namespace wl::gguf::decoders {

namespace {
constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};

float trit(uint8_t x, int p, float d) {
  const auto q = static_cast<uint8_t>(x * kPow3[p]);
  const int digit = (static_cast<uint16_t>(q) * 3) >> 8;
  return static_cast<float>(digit - 1) * d;
}
}  // namespace

void tq1_0(const uint8_t* b, float* y) {
  const uint8_t* qs = b;
  const uint8_t* qh = b + 48;
  const float d = f16_at(b + 52);
  for (int p = 0; p < 5; ++p)
    for (int m = 0; m < 32; ++m) y[32 * p + m] = trit(qs[m], p, d);
  for (int p = 0; p < 5; ++p)
    for (int m = 0; m < 16; ++m) y[160 + 16 * p + m] = trit(qs[32 + m], p, d);
  for (int p = 0; p < 4; ++p)
    for (int m = 0; m < 4; ++m) y[240 + 4 * p + m] = trit(qh[m], p, d);
}

}  // namespace wl::gguf::decoders
