// The Highway dequantisation kernels against the scalar reference, bit for bit, on every SIMD
// target this CPU runs.
#include <gtest/gtest.h>

#include <hwy/targets.h>

#include <cstring>
#include <random>
#include <vector>

#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"

namespace wl::gguf {
namespace {

struct Case {
  GgmlType type;
  std::vector<size_t> f16_fields;  // byte offsets of the block's f16 scales
};

TEST(GgufQuantsSimd, BitExactAgainstTheScalarReferenceOnEveryTarget) {
  const std::vector<Case> cases = {{GgmlType::Q8_0, {0}},    {GgmlType::Q4_0, {0}},    {GgmlType::Q4_1, {0, 2}},
                                   {GgmlType::Q5_0, {0}},    {GgmlType::Q5_1, {0, 2}}, {GgmlType::Q4_K, {0, 2}},
                                   {GgmlType::Q5_K, {0, 2}}, {GgmlType::Q6_K, {208}}, {GgmlType::Q2_K, {80, 82}},
                                   {GgmlType::Q3_K, {108}},  {GgmlType::IQ4_XS, {0}}};
  struct Reset {
    ~Reset() { hwy::SetSupportedTargetsForTest(0); }
  } reset;
  std::mt19937 rng(7);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Case& c : cases) {
      const GgmlTypeTraits& traits = *ggml_type_traits(static_cast<uint32_t>(c.type));
      SCOPED_TRACE(std::string(traits.name));
      constexpr uint64_t kBlocks = 37;
      std::vector<uint8_t> blocks(kBlocks * traits.block_bytes);
      for (uint8_t& b : blocks) b = static_cast<uint8_t>(rng());
      for (uint64_t i = 0; i < kBlocks; ++i)
        for (size_t at : c.f16_fields) {
          // Finite scales of every magnitude, subnormals included (exponent field 0..30).
          const uint16_t bits = static_cast<uint16_t>((rng() & 0x83FF) | ((rng() % 31) << 10));
          std::memcpy(&blocks[i * traits.block_bytes + at], &bits, 2);
        }
      std::vector<float> want(kBlocks * traits.block_elems), got(want.size(), -1.0f);
      ASSERT_TRUE(dequantize_reference(c.type, blocks.data(), kBlocks, want.data()));
      ASSERT_TRUE(dequantize_simd(c.type, blocks.data(), kBlocks, got.data()));
      for (size_t i = 0; i < want.size(); ++i) {
        uint32_t a, b;
        std::memcpy(&a, &want[i], 4);
        std::memcpy(&b, &got[i], 4);
        ASSERT_EQ(a, b) << "element " << i << ": " << want[i] << " vs " << got[i];
      }
    }
  }
  EXPECT_FALSE(dequantize_simd(GgmlType::F32, nullptr, 0, nullptr));
}

}  // namespace
}  // namespace wl::gguf
