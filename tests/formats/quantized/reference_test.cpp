// Every folder of ../shared/testdata/quantized: the dense weight our decoders present, rounded once
// to BF16, equals the method's own library's result (expected.safetensors) bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// BF16 bits with −0.0 read as +0.0 (bitsandbytes' FP4 kernel gives −0.0 where its map holds +0.0).
uint16_t canonical(uint16_t bits) { return bits == 0x8000 ? 0 : bits; }

class QuantizedReference : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizedReference, DequantizesBitExactToBf16) {
  WL_REQUIRE_TESTDATA();
  const std::string dir = (test::testdata_dir() / "quantized" / GetParam()).string();
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no " << dir;
  auto quantized = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir + "/quantized.safetensors");
  auto expected = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir + "/expected.safetensors");
  ASSERT_EQ(expected->tensors().size(), 1u);
  const TensorInfo& want = expected->tensors()[0];
  // The packed tensors are hidden: the catalogue holds the dense weight and nothing else.
  ASSERT_EQ(quantized->tensors().size(), 1u) << quantized->tensors()[1].name;
  const TensorInfo& got = quantized->at(want.name);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_NE(quantized->metadata().count("quantization"), 0u);
  const TensorView dense = quantized->load(got, DType::BF16);
  const TensorView reference = expected->load(want);
  const auto* a = reinterpret_cast<const uint16_t*>(dense.raw());
  const auto* b = reinterpret_cast<const uint16_t*>(reference.raw());
  uint64_t differ = 0, first = 0;
  for (uint64_t i = 0; i < dense.numel(); ++i)
    if (canonical(a[i]) != canonical(b[i]) && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << "of " << dense.numel() << "; first at " << first << ": got " << bf16_bits_to_f32(a[first])
                        << ", want " << bf16_bits_to_f32(b[first]);
  // F32 then rounded once is what a BF16 read gives too.
  const TensorView f32 = quantized->load(got, DType::F32);
  const auto* f = reinterpret_cast<const float*>(f32.raw());
  for (uint64_t i = 0; i < f32.numel(); ++i)
    if (!std::isnan(f[i])) {
      ASSERT_EQ(canonical(f32_to_bf16_bits(f[i])), canonical(a[i])) << i;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Folders, QuantizedReference,
    ::testing::Values("gptq-falcon3-1b-int4", "gptq-falcon3-1b-int8", "gptq-llama3.2-1b-int4", "gptq-llama3.2-1b-gptqmodel-int8",
                      "awq-falcon3-1b", "awq-llama3.2-1b", "bnb-nf4-llama3.2-1b", "bnb-nf4-dq-llama3.2-1b",
                      "bnb-nf4-dq-qwen2.5-1.5b", "bnb-nf4-dq-phi3.5-mini", "bnb-fp4-llama3.2-1b", "bnb-int8-llama3.2-1b",
                      "fp8-block-qwen3-1.7b", "fp8-block-qwen3-4b-f16scale", "fp8-tensor-ministral3-3b",
                      "fp8-tensor-llama3.2-1b-redhat", "fp8-channel-llama3.2-1b-redhat"),
    [](const ::testing::TestParamInfo<std::string>& p) {
      std::string n = p.param;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

}  // namespace
}  // namespace wl

namespace wl {
namespace {

// A slice of a dense view (a tensor-parallel rank's rows or columns, a diff window) is the same
// slice of the whole decoded weight.
TEST(QuantizedReferenceSlices, RowsAndColumnsOfADecodedLayer) {
  WL_REQUIRE_TESTDATA();
  const std::string dir = (test::testdata_dir() / "quantized" / "gptq-llama3.2-1b-int4").string();
  auto quantized = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir + "/quantized.safetensors");
  auto expected = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir + "/expected.safetensors");
  const TensorInfo& got = quantized->tensors()[0];
  const TensorView want = expected->load(expected->tensors()[0]);
  const auto* w = reinterpret_cast<const uint16_t*>(want.raw());
  for (size_t dim : {0, 1}) {
    std::vector<uint16_t> part(256 * 96);
    quantized->read(got, DType::BF16, part.data(), Slice{dim, 64, 160});
    for (uint64_t r = 0; r < (dim == 0 ? 96u : 256u); ++r)
      for (uint64_t c = 0; c < (dim == 0 ? 256u : 96u); ++c) {
        const uint64_t row = dim == 0 ? r + 64 : r, col = dim == 0 ? c : c + 64;
        ASSERT_EQ(part[r * (dim == 0 ? 256 : 96) + c], w[row * 256 + col]) << dim << ": " << r << ", " << c;
      }
  }
}

}  // namespace
}  // namespace wl
