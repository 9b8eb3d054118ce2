// Q5_0: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeQ5_0, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::Q5_0, known_pattern(32))), "cd2c2ab55aa980b3d5f82a5d7fa1c4f7194c6e91b3e6");
}

TEST(GgufQuantizeQ5_0, RoundTripsWithinItsStep) {
  // A step of max / 16 at the top (the code 32 is clipped to 31), plus the f16 rounding of the scale (relative, or absolute below f16's normals).
  expect_round_trip_within(GgmlType::Q5_0, [](float amax) { return amax / 16 + amax * 2e-3f + 16 * kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
