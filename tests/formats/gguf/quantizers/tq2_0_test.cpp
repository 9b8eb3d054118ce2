// TQ2_0: a known block (gguf-py's bytes for the same input) and a round trip through our decoder.
#include "formats/gguf/quantizers/quantizer_test_util.hpp"

namespace wl::test {
namespace {

TEST(GgufQuantizeTQ2_0, KnownBlockAsGgufPyWritesIt) {
  EXPECT_EQ(hex(quantize(GgmlType::TQ2_0, known_pattern(256))), "44114411996699441144669966114411886699661144119966994411446699664411441199669944114466996611441188669966114411996699441144669966cd3c");
}

TEST(GgufQuantizeTQ2_0, RoundTripsWithinItsStep) {
  // Ternary: -amax, 0 or amax, so at most half of amax (and the f16 rounding of amax).
  expect_round_trip_within(GgmlType::TQ2_0, [](float amax) { return amax * 0.5f * 1.001f + kF16Subnormal; });
}

}  // namespace
}  // namespace wl::test
