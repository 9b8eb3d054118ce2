// Microscaling checkpoints (gpt-oss MXFP4 experts, compressed-tensors NVFP4 and MXFP8, ModelOpt NVFP4): values by the OCP rules on a
// few hand-made codes (tests/python/test_microscaling.py compares with the libraries bit for bit),
// tensor-parallel slices of whole blocks, decoders rebuilt from a catalogue value, and malformed
// layers refused naming the file, the tensor and the rule.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "loaders/catalogue_value.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/packed_shard.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

using Tensors = std::vector<std::pair<std::string, TensorView>>;

TensorView filled(DType dtype, Shape shape, uint8_t byte) {
  TensorView t = TensorView::empty(dtype, std::move(shape));
  std::memset(t.raw(), byte, t.nbytes());
  return t;
}

std::unique_ptr<WeightSource> folder(const test::TempDir& dir, const Tensors& tensors, const std::string& quantization_config,
                                     bool as_stored) {
  write_safetensors(dir.file("model.safetensors"), tensors);
  test::write_bytes(dir.file("config.json"), R"({"quantization_config": )" + quantization_config + "}");
  Kwargs options;
  if (as_stored) options["quantized"] = std::string("as_stored");
  return WeightLoaderRegistry::with_builtins()->create("local", options)->get_weights(dir.path().string());
}

void expect_slice(const Slice& s, size_t dim, uint64_t begin, uint64_t end) {
  EXPECT_EQ(s.dim, dim);
  EXPECT_EQ(s.begin, begin);
  EXPECT_EQ(s.end, end);
}

const char* kMxfp4 = R"({"quant_method": "mxfp4"})";
const std::string kExperts = "model.layers.0.mlp.experts.";

// Two experts, 4 rows, 2 blocks of 32 values a row.
Tensors gpt_oss_experts(uint8_t code_byte, uint8_t scale) {
  return {{kExperts + "down_proj_blocks", filled(DType::U8, {2, 4, 2, 16}, code_byte)},
          {kExperts + "down_proj_scales", filled(DType::U8, {2, 4, 2}, scale)},
          {kExperts + "down_proj_bias", filled(DType::F32, {2, 4}, 0)}};
}

TEST(Microscaling, GptOssExpertsDenseTransposed) {
  test::TempDir dir;
  auto s = folder(dir, gpt_oss_experts(0xA3, 128), kMxfp4, false);  // codes 3 (1.5) low, 0xA (-1) high; 2^1
  const TensorInfo& w = s->at(kExperts + "down_proj");
  EXPECT_EQ(w.shape, (Shape{2, 64, 4}));
  const TensorView v = s->load(w, DType::F32);
  const float* f = v.data<float>();
  EXPECT_EQ(f[0], 3.0f);   // [0, 0, 0]: input 0, the low nibble
  EXPECT_EQ(f[4], -2.0f);  // [0, 1, 0]: input 1, the high nibble
  EXPECT_EQ(s->find(kExperts + "down_proj_blocks"), nullptr);
}

TEST(Microscaling, GptOssScaleFFScalesAsTransformersLdexp) {
  test::TempDir dir;
  auto s = folder(dir, gpt_oss_experts(0x91, 255), kMxfp4, false);  // codes 1 (0.5) and 9 (-0.5); 2^128
  const TensorView v = s->load(s->at(kExperts + "down_proj"), DType::F32);
  EXPECT_EQ(v.data<float>()[0], 0x1p127f);  // 0.5 · 2^128 is finite, as torch.ldexp computes it
  EXPECT_EQ(v.data<float>()[4], -0x1p127f);
}

TEST(Microscaling, GptOssExpertsSplitOnWholeBlocks) {
  test::TempDir dir;
  auto s = folder(dir, gpt_oss_experts(0, 127), kMxfp4, true);
  const TensorInfo& blocks = s->at(kExperts + "down_proj_blocks");
  const TensorInfo& scales = s->at(kExperts + "down_proj_scales");
  expect_slice(packed_shard(*s, blocks, ParallelStyle::Column, 1, 2), 1, 2, 4);
  expect_slice(packed_shard(*s, scales, ParallelStyle::Column, 1, 2), 1, 2, 4);
  expect_slice(packed_shard(*s, blocks, ParallelStyle::Row, 1, 2), 2, 1, 2);  // one block of 32 inputs each
  expect_slice(packed_shard(*s, scales, ParallelStyle::Row, 1, 2), 2, 1, 2);
  expect_slice(packed_shard(*s, s->at(kExperts + "down_proj_bias"), ParallelStyle::Column, 0, 2), 1, 0, 2);
  EXPECT_EQ(packed_shard(*s, s->at(kExperts + "down_proj_bias"), ParallelStyle::Row, 0, 2).end, UINT64_MAX);
  const std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, blocks, ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("down_proj_blocks"), std::string::npos) << m;
  EXPECT_NE(m.find("does not split into 4 ranks"), std::string::npos) << m;
}

TEST(Microscaling, GptOssScalesThatDoNotMatchAreNamed) {
  test::TempDir dir;
  Tensors t = gpt_oss_experts(0, 127);
  t[1].second = filled(DType::U8, {2, 4, 1}, 127);
  const std::string m = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] { folder(dir, t, kMxfp4, false); });
  for (const char* part : {"model.safetensors", "down_proj_scales", "[2, 4, 1]", "E8M0 scale per block of 32", "[2, 4, 2]"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
}

const char* kNvfp4 = R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"group_0":
  {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}})";
const std::string kLinear = "model.layers.0.mlp.down_proj.";

Tensors nvfp4_linear(Shape scale_shape) {
  TensorView global = TensorView::empty(DType::F32, {1});
  global.data<float>()[0] = 2.0f;
  return {{kLinear + "weight_packed", filled(DType::U8, {4, 16}, 0xA3)},
          {kLinear + "weight_scale", filled(DType::F8_E4M3, std::move(scale_shape), 0x38)},  // 1.0
          {kLinear + "weight_global_scale", global}};
}

TEST(Microscaling, CompressedTensorsNvfp4DenseAndSplits) {
  test::TempDir dense_dir, stored_dir;
  auto dense = folder(dense_dir, nvfp4_linear({4, 2}), kNvfp4, false);
  const TensorView v = dense->load(dense->at(kLinear + "weight"), DType::F32);
  EXPECT_EQ(v.shape(), (Shape{4, 32}));
  EXPECT_EQ(v.data<float>()[0], 0.75f);  // 1.5 · 1.0 / 2
  EXPECT_EQ(v.data<float>()[1], -0.5f);
  auto s = folder(stored_dir, nvfp4_linear({4, 2}), kNvfp4, true);
  const TensorInfo& packed = s->at(kLinear + "weight_packed");
  expect_slice(packed_shard(*s, packed, ParallelStyle::Column, 1, 2), 0, 2, 4);
  expect_slice(packed_shard(*s, packed, ParallelStyle::Row, 1, 2), 1, 8, 16);  // 16 inputs: 8 bytes
  expect_slice(packed_shard(*s, s->at(kLinear + "weight_scale"), ParallelStyle::Row, 1, 2), 1, 1, 2);
  EXPECT_EQ(packed_shard(*s, s->at(kLinear + "weight_global_scale"), ParallelStyle::Row, 1, 2).end, UINT64_MAX);
  const std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, packed, ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("would cut a group of 8"), std::string::npos) << m;
}

TEST(Microscaling, CompressedTensorsNvfp4ScalesThatDoNotMatchAreNamed) {
  test::TempDir dir;
  const std::string m = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] { folder(dir, nvfp4_linear({4, 3}), kNvfp4, false); });
  for (const char* part : {"model.safetensors", "weight_scale", "[4, 3]", "groups of 16", "[4, 2]"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
}

// ModelOpt's NVFP4 export (its config.json block): scales multiplied by weight_scale_2, code 8 as +0.
const char* kModeloptNvfp4 = R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head"],
  "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}}})";

Tensors modelopt_linear(Shape scale_shape) {
  TensorView second = TensorView::empty(DType::F32, {});
  second.data<float>()[0] = 2.0f;
  return {{kLinear + "weight", filled(DType::U8, {4, 16}, 0x8B)},                        // codes 11 (-1.5), 8 (-0)
          {kLinear + "weight_scale", filled(DType::F8_E4M3, std::move(scale_shape), 0x38)},  // 1.0
          {kLinear + "weight_scale_2", second},
          {kLinear + "input_scale", filled(DType::F32, {}, 0)}};
}

TEST(Microscaling, ModeloptNvfp4DenseAndSplits) {
  test::TempDir dense_dir, stored_dir;
  auto dense = folder(dense_dir, modelopt_linear({4, 2}), kModeloptNvfp4, false);
  EXPECT_EQ(dense->find(kLinear + "weight_scale_2"), nullptr);
  EXPECT_EQ(dense->find(kLinear + "input_scale"), nullptr);
  const TensorView v = dense->load(dense->at(kLinear + "weight"), DType::F32);
  EXPECT_EQ(v.shape(), (Shape{4, 32}));
  EXPECT_EQ(v.data<float>()[0], -3.0f);  // -1.5 · (1.0 · 2)
  EXPECT_EQ(std::bit_cast<uint32_t>(v.data<float>()[1]), 0u);  // +0, as ModelOpt's table has it
  auto s = folder(stored_dir, modelopt_linear({4, 2}), kModeloptNvfp4, true);
  const TensorInfo& packed = s->at(kLinear + "weight");
  expect_slice(packed_shard(*s, packed, ParallelStyle::Column, 1, 2), 0, 2, 4);
  expect_slice(packed_shard(*s, packed, ParallelStyle::Row, 1, 2), 1, 8, 16);  // 16 inputs: 8 bytes
  expect_slice(packed_shard(*s, s->at(kLinear + "weight_scale"), ParallelStyle::Row, 1, 2), 1, 1, 2);
  EXPECT_EQ(packed_shard(*s, s->at(kLinear + "weight_scale_2"), ParallelStyle::Row, 1, 2).end, UINT64_MAX);
  const std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, packed, ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("would cut a group of 8"), std::string::npos) << m;
  test::TempDir bad_dir;
  const std::string bad = test::expect_error(ErrorCode::QuantTensorsInconsistent,
                                             [&] { folder(bad_dir, modelopt_linear({4, 3}), kModeloptNvfp4, false); });
  for (const char* part : {"model.safetensors", "weight_scale", "[4, 3]", "groups of 16"})
    EXPECT_NE(bad.find(part), std::string::npos) << part << " in " << bad;
}

const char* kMxfp8 = R"({"quant_method": "compressed-tensors", "format": "mxfp8-quantized", "config_groups": {"group_0":
  {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32}}}})";

Tensors mxfp8_linear() {
  return {{kLinear + "weight", filled(DType::F8_E4M3, {4, 64}, 0x38)},  // 1.0
          {kLinear + "weight_scale", filled(DType::U8, {4, 2}, 125)}};   // 2^-2
}

TEST(Microscaling, CompressedTensorsMxfp8GroupsOfE8m0) {
  const Tensors t = mxfp8_linear();
  test::TempDir dense_dir, stored_dir;
  auto dense = folder(dense_dir, t, kMxfp8, false);
  EXPECT_EQ(dense->load(dense->at(kLinear + "weight"), DType::F32).data<float>()[63], 0.25f);
  auto s = folder(stored_dir, t, kMxfp8, true);
  expect_slice(packed_shard(*s, s->at(kLinear + "weight"), ParallelStyle::Row, 1, 2), 1, 32, 64);
  expect_slice(packed_shard(*s, s->at(kLinear + "weight_scale"), ParallelStyle::Row, 1, 2), 1, 1, 2);
  expect_slice(packed_shard(*s, s->at(kLinear + "weight_scale"), ParallelStyle::Column, 1, 2), 0, 2, 4);
  const std::string m =
      test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, s->at(kLinear + "weight"), ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("would cut a group of 32"), std::string::npos) << m;
}

// A rank given the catalogue as a value rebuilds each layer's decoder from its spec: the same values.
TEST(Microscaling, LayersComeBackFromACatalogueValue) {
  const std::vector<std::pair<Tensors, const char*>> layers{
      {gpt_oss_experts(0xA3, 130), kMxfp4}, {nvfp4_linear({4, 2}), kNvfp4}, {mxfp8_linear(), kMxfp8}};
  for (const auto& [tensors, config] : layers) {
    test::TempDir dir;
    auto a = folder(dir, tensors, config, false);
    const std::optional<std::string> value = catalogue_value(*a);
    ASSERT_TRUE(value.has_value()) << config;
    auto b = catalogue_from_value(*value, local_opener());
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (size_t i = 0; i < a->tensors().size(); ++i) {
      EXPECT_EQ(a->tensors()[i].stored_type(), b->tensors()[i].stored_type());
      const TensorView x = a->load(a->tensors()[i], DType::F32), y = b->load(b->tensors()[i], DType::F32);
      ASSERT_EQ(x.nbytes(), y.nbytes());
      EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0) << a->tensors()[i].name;
    }
  }
}

}  // namespace
}  // namespace wl
