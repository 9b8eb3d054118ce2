// Q5_1: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeQ5_1, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::Q5_1, known_pattern(32))), "e12ccdbc2ab55aa980a2d5f72a4c7f91c4e6193b6e80b3d5");
}

TEST(GgufQuantizeQ5_1, RoundTripsWithinItsStep) {
  // Half a step of (max - min) / 31, plus the f16 rounding of scale and minimum (relative, or absolute below f16's normals).
  expect_round_trip_within(GgmlType::Q5_1, [](float amax) { return 2 * amax / 31 * 0.51f + amax * 4e-3f + 32 * kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
