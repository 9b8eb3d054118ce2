// Q4_1: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeQ4_1, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::Q4_1, known_pattern(32))), "0a31cdbc40d962fb952eb751da730c953ec851ea");
}

TEST(GgufQuantizeQ4_1, RoundTripsWithinItsStep) {
  // Half a step of (max - min) / 15, plus the f16 rounding of scale and minimum (relative, or absolute below f16's normals).
  expect_round_trip_within(GgmlType::Q4_1, [](float amax) { return 2 * amax / 15 * 0.51f + amax * 4e-3f + 16 * kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
