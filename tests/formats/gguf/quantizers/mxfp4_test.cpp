// MXFP4: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeMXFP4, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::MXFP4, known_pattern(32))), "7dce51ad641cd649ce629de52bd650be63");
}

TEST(GgufQuantizeMXFP4, RoundTripsWithinItsStep) {
  // Between E2M1's top levels 4 and 6 (times the scale 2^(e-127)) half a step is a sixth of 6; above 6 the values clip: at most a quarter of amax.
  expect_round_trip_within(GgmlType::MXFP4, [](float amax) { return amax * 0.25f + 1e-30f; });
}

}  // namespace
}  // namespace wl::test
