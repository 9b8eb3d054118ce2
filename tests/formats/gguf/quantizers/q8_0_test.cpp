// Q8_0: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeQ8_0, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::Q8_0, known_pattern(32))), "d6208114a93cd063f88d20b547dc6f04992cc053e87b10a538cc5ff4891cb143d86b");
}

TEST(GgufQuantizeQ8_0, RoundTripsWithinItsStep) {
  // Half a step of amax / 127, plus the f16 rounding of the scale (2^-11 relative, times 127 steps).
  expect_round_trip_within(GgmlType::Q8_0, [](float amax) { return amax / 127 * 0.51f + amax * 2e-3f + 127 * kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
