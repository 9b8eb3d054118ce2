// Q4_0: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeQ4_0, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::Q4_0, known_pattern(32))), "cd3040d973fc952ec851ea731da63fc862fb");
}

TEST(GgufQuantizeQ4_0, RoundTripsWithinItsStep) {
  // A step of max / 8 at the top (the code 16 is clipped to 15), plus the f16 rounding of the scale (relative, or absolute below f16's normals).
  expect_round_trip_within(GgmlType::Q4_0, [](float amax) { return amax / 8 + amax * 2e-3f + 8 * kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
