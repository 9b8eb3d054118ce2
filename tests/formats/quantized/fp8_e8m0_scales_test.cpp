// FP8 E4M3 weights whose block scales are stored as safetensors' F8_E8M0 (DeepSeek's ue8m0
// weight_scale_inv, torch's float8_e8m0fnu): W = f32(q) · 2^(e − 127), 0xFF NaN as torch's
// scale.float() gives it, bit for bit in F32 and rounded once to BF16; the scales' shape checked as
// for float scales. tests/python/test_subbyte_floats.py compares with torch on every exponent.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

const std::string kLinear = "model.layers.0.mlp.down_proj.";
const char* kDeepSeek = R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
  "weight_block_size": [2, 2], "scale_fmt": "ue8m0"})";

// e4m3fn by its definition: bias 7, subnormals m/8 · 2^-6, S.1111.111 NaN.
float e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return static_cast<float>((b & 0x80) ? -mag : mag);
}

TensorView bytes_of(DType dtype, Shape shape, const std::vector<uint8_t>& bytes) {
  TensorView t = TensorView::empty(dtype, std::move(shape));
  std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

std::unique_ptr<WeightSource> folder(const test::TempDir& dir, const TensorView& weight, const TensorView& scale) {
  write_safetensors(dir.file("model.safetensors"), {{kLinear + "weight", weight}, {kLinear + "weight_scale_inv", scale}});
  test::write_bytes(dir.file("config.json"), std::string(R"({"quantization_config": )") + kDeepSeek + "}");
  return WeightLoaderRegistry::with_builtins()->create("local", {})->get_weights(dir.path().string());
}

TEST(Fp8E8m0Scales, BlockScalesInF32AndBf16) {
  // A [4, 6] weight in 2x2 blocks: 2 x 3 scales, every kind of exponent among them.
  std::vector<uint8_t> q(24);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(0x31 + 11 * i) ^ (i % 3 ? 0x80 : 0);
  const std::vector<uint8_t> e = {127, 0, 254, 255, 1, 140};
  test::TempDir dir;
  auto s = folder(dir, bytes_of(DType::F8_E4M3, {4, 6}, q), bytes_of(DType::F8_E8M0, {2, 3}, e));
  const TensorInfo& w = s->at(kLinear + "weight");
  EXPECT_EQ(w.stored_type(), "FP8-E4M3-block2x2");
  EXPECT_EQ(s->find(kLinear + "weight_scale_inv"), nullptr);  // consumed by the layer
  const TensorView f32 = s->load(w, DType::F32), bf16 = s->load(w, DType::BF16);
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 6; ++c) {
      const uint8_t code = e[(r / 2) * 3 + c / 2];
      const float scale = code == 255 ? NAN : std::ldexp(1.0f, code - 127);  // 2^-127 is a subnormal float
      const float want = e4m3(q[r * 6 + c]) * scale;
      const float got = f32.data<float>()[r * 6 + c];
      SCOPED_TRACE(::testing::Message() << "row " << r << " col " << c << " scale code " << int(code));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
        EXPECT_TRUE(std::isnan(bf16_bits_to_f32(bf16.data<uint16_t>()[r * 6 + c])));
        continue;
      }
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want));
      EXPECT_EQ(bf16.data<uint16_t>()[r * 6 + c], f32_to_bf16_bits(want));
    }
}

TEST(Fp8E8m0Scales, ScalesThatDoNotMatchTheBlocksAreNamed) {
  test::TempDir dir;
  const std::string m = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] {
    folder(dir, bytes_of(DType::F8_E4M3, {4, 6}, std::vector<uint8_t>(24, 0x38)),
           bytes_of(DType::F8_E8M0, {2, 2}, {127, 127, 127, 127}));
  });
  EXPECT_NE(m.find(kLinear + "weight_scale_inv"), std::string::npos) << m;
  EXPECT_NE(m.find("for block2x2 blocks of weight [4, 6], the scales must be BF16/F16/F32/F8_E8M0 [2, 3]"), std::string::npos)
      << m;
}

TEST(Fp8E8m0Scales, ConfigShowsScaleFmt) {
  test::TempDir dir;
  auto s = folder(dir, bytes_of(DType::F8_E4M3, {2, 2}, {0x38, 0x38, 0x38, 0x38}), bytes_of(DType::F8_E8M0, {1, 1}, {128}));
  EXPECT_EQ(s->load(s->at(kLinear + "weight"), DType::F32).data<float>()[3], 2.0f);
  bool described = false;
  for (const auto& [key, value] : s->metadata()) described |= value.find("2x2 block scale_inv (ue8m0)") != std::string::npos;
  EXPECT_TRUE(described);
}

}  // namespace
}  // namespace wl
