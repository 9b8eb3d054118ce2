// TQ1_0: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeTQ1_0, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::TQ1_0, known_pattern(256))), "20602060a0e0a0206020e0a0e060206040e0a0e0602060a0e0a0206020e0a0e0902d932dba86ba932d9386ba862d932db888bb92cd3c");
}

TEST(GgufQuantizeTQ1_0, RoundTripsWithinItsStep) {
  // Ternary: -amax, 0 or amax, so at most half of amax (and the f16 rounding of amax).
  expect_round_trip_within(GgmlType::TQ1_0, [](float amax) { return amax * 0.5f * 1.001f + kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
