// Dense → GPTQ-4bit / FP8 per channel → dense: our checkpoints read back within the quantisation
// error, and our GPTQ decoded by our decoder equals the formula computed here by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/format.hpp"
#include "weightloader/quantize.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

struct Dense {
  std::vector<float> w, norm;
  std::unique_ptr<WeightSource> source;
};

// A [out, in] linear weight plus a norm that must stay dense.
Dense make_dense(uint64_t out, uint64_t in) {
  Dense d;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  d.w.resize(out * in);
  for (float& v : d.w) v = normal(rng);
  for (uint64_t i = 0; i < in; ++i) d.w[i] = 0.0f;  // an all-zero first group row
  d.norm.assign(in, 1.0f);
  d.source = WeightSource::from_memory("<dense>", {{"model.layers.0.mlp.up_proj.weight", DType::F32, {out, in}, {}, d.w.data(), nullptr},
                                                   {"model.norm.weight", DType::F32, {in}, {}, d.norm.data(), nullptr}});
  return d;
}

// The raw tensors of a written file, bypassing the dense view.
std::unique_ptr<WeightSource> raw_tensors(const std::string& path) {
  const FileFormat& f = *find_file_format("safetensors");
  return open_files(f, {path}, path, local_opener());
}

std::unique_ptr<WeightSource> written(const WeightSource& quantized, const test::TempDir& tmp) {
  convert_checkpoint(quantized, tmp.file("q.safetensors"), {});
  return WeightLoaderRegistry::with_builtins()->create("local")->get_weights(tmp.file("q.safetensors"));
}

TEST(Quantize, GptqInt4RoundTripsWithinHalfAStep) {
  test::TempDir tmp;
  const uint64_t out = 16, in = 256, group = 64;
  Dense d = make_dense(out, in);
  auto back = written(*quantize_checkpoint(*d.source, {QuantizeMethod::GptqInt4, static_cast<int64_t>(group)}), tmp);
  ASSERT_EQ(back->tensors().size(), 2u);  // the dense weight and the norm: packed tensors hidden
  EXPECT_NE(back->metadata().at("quantization").find("gptq 4-bit, group 64"), std::string::npos);
  const TensorView w = back->load(back->at("model.layers.0.mlp.up_proj.weight"), DType::F32);
  const auto* got = reinterpret_cast<const float*>(w.raw());

  // Hand computation from the stored tensors: W = (q − (z + 1)) · s.
  auto raw = raw_tensors(tmp.file("q.safetensors"));
  const TensorView qweight = raw->load(raw->at("model.layers.0.mlp.up_proj.qweight"));
  const TensorView qzeros = raw->load(raw->at("model.layers.0.mlp.up_proj.qzeros"));
  const TensorView scales = raw->load(raw->at("model.layers.0.mlp.up_proj.scales"), DType::F32);
  EXPECT_EQ(qweight.shape(), (Shape{in / 8, out}));
  EXPECT_EQ(qzeros.shape(), (Shape{in / group, out / 8}));
  const auto* qw = reinterpret_cast<const uint32_t*>(qweight.raw());
  const auto* qz = reinterpret_cast<const uint32_t*>(qzeros.raw());
  const auto* s = reinterpret_cast<const float*>(scales.raw());
  for (uint64_t o = 0; o < out; ++o)
    for (uint64_t i = 0; i < in; ++i) {
      const uint64_t g = i / group;
      const int q = static_cast<int>((qw[(i / 8) * out + o] >> (4 * (i % 8))) & 15);
      const int z = static_cast<int>((qz[g * (out / 8) + o / 8] >> (4 * (o % 8))) & 15) + 1;
      ASSERT_EQ(z, 8);
      const float hand = static_cast<float>(q - z) * s[g * out + o];
      ASSERT_EQ(got[o * in + i], hand) << o << ", " << i;
      // Round to nearest: within half a step, plus what the F16 rounding of the scale (2^-11 of it)
      // costs the largest value, 7.5 steps out, when the clamp at 15 keeps it from rounding up.
      ASSERT_LE(std::fabs(got[o * in + i] - d.w[o * in + i]), s[g * out + o] * (0.5f + 8.0f / 2048.0f)) << o << ", " << i;
    }
  EXPECT_EQ(reinterpret_cast<const float*>(back->load(back->at("model.norm.weight")).raw())[3], 1.0f);
}

TEST(Quantize, Fp8ChannelRoundTripsWithinE4m3Precision) {
  test::TempDir tmp;
  const uint64_t out = 8, in = 64;
  Dense d = make_dense(out, in);
  auto back = written(*quantize_checkpoint(*d.source, {QuantizeMethod::Fp8Channel, 0}), tmp);
  EXPECT_EQ(back->at("model.layers.0.mlp.up_proj.weight").stored_type(), "FP8-E4M3-channel");
  const TensorView w = back->load(back->at("model.layers.0.mlp.up_proj.weight"), DType::F32);
  const auto* got = reinterpret_cast<const float*>(w.raw());
  for (uint64_t k = 0; k < out * in; ++k)  // 3 mantissa bits: relative error at most 1/16, plus subnormals near 0
    ASSERT_LE(std::fabs(got[k] - d.w[k]), std::fabs(d.w[k]) / 16.0f + 1e-5f) << k;
}

TEST(Quantize, RefusesAGroupThatDoesNotDivideEveryLayer) {
  Dense d = make_dense(16, 96);
  test::expect_error(ErrorCode::QuantUnsupported, [&] { quantize_checkpoint(*d.source, {QuantizeMethod::GptqInt4, 64}); });
  test::expect_error(ErrorCode::InvalidArgument, [&] { quantize_checkpoint(*d.source, {QuantizeMethod::GptqInt4, 0}); });
}

}  // namespace
}  // namespace wl
