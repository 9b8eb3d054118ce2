// Tensor-parallel slices of packed layers: GPTQ/AWQ along whole words and groups, FP8 along its
// scale blocks; splits that would cut a group or a word refused, naming the tensor and the rule.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/packed_shard.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> as_stored(const std::string& folder) {
  return WeightLoaderRegistry::with_builtins()
      ->create("local", {{"quantized", std::string("as_stored")}})
      ->get_weights((test::testdata_dir() / "quantized" / folder / "quantized.safetensors").string());
}

void expect_slice(const Slice& s, size_t dim, uint64_t begin, uint64_t end) {
  EXPECT_EQ(s.dim, dim);
  EXPECT_EQ(s.begin, begin);
  EXPECT_EQ(s.end, end);
}

TEST(PackedShard, AsStoredLoadsAreTheFilesTensors) {
  WL_REQUIRE_TESTDATA();
  auto s = as_stored("gptq-falcon3-1b-int4");
  ASSERT_EQ(s->tensors().size(), 4u);
  EXPECT_EQ(s->at("model.layers.0.mlp.gate_proj.qweight").dtype, DType::I32);
  EXPECT_NE(s->metadata().at("quantization").find("as stored"), std::string::npos);
}

TEST(PackedShard, GptqColumnAndRowSplits) {
  WL_REQUIRE_TESTDATA();
  auto s = as_stored("gptq-falcon3-1b-int4");  // in 256, out 256, group 128, 8 inputs per word
  auto at = [&](const char* n) -> const TensorInfo& { return s->at(std::string("model.layers.0.mlp.gate_proj.") + n); };
  expect_slice(packed_shard(*s, at("qweight"), ParallelStyle::Column, 1, 2), 1, 128, 256);
  expect_slice(packed_shard(*s, at("qzeros"), ParallelStyle::Column, 1, 2), 1, 16, 32);
  expect_slice(packed_shard(*s, at("scales"), ParallelStyle::Column, 1, 2), 1, 128, 256);
  EXPECT_EQ(packed_shard(*s, at("g_idx"), ParallelStyle::Column, 1, 2).end, UINT64_MAX);  // every rank holds it
  expect_slice(packed_shard(*s, at("qweight"), ParallelStyle::Row, 1, 2), 0, 16, 32);  // 128 inputs = 16 packed rows
  expect_slice(packed_shard(*s, at("scales"), ParallelStyle::Row, 1, 2), 0, 1, 2);    // one whole group each
  expect_slice(packed_shard(*s, at("qzeros"), ParallelStyle::Row, 0, 2), 0, 0, 1);
  expect_slice(packed_shard(*s, at("g_idx"), ParallelStyle::Row, 1, 2), 0, 128, 256);
  // 4 ranks would give each 64 inputs: half a group.
  const std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("qweight"), ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("would cut a group"), std::string::npos) << m;
  EXPECT_NE(m.find("qweight"), std::string::npos) << m;
  test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("scales"), ParallelStyle::Row, 0, 4); });
  // 64 ranks: 4 outputs each, half a word of zeros.
  test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("scales"), ParallelStyle::Column, 0, 64); });
}

TEST(PackedShard, AwqFp8AndRefusals) {
  WL_REQUIRE_TESTDATA();
  auto awq = as_stored("awq-llama3.2-1b");  // qweight [256 in, 32 words of 8 outputs]
  const TensorInfo& qweight = awq->at("model.layers.0.mlp.gate_proj.qweight");
  expect_slice(packed_shard(*awq, qweight, ParallelStyle::Column, 1, 4), 1, 8, 16);
  expect_slice(packed_shard(*awq, qweight, ParallelStyle::Row, 1, 2), 0, 128, 256);
  auto block = as_stored("fp8-block-qwen3-1.7b");  // weight [256, 256], scale_inv [2, 2] per 128x128
  expect_slice(packed_shard(*block, block->at("model.layers.0.mlp.down_proj.weight"), ParallelStyle::Row, 1, 2), 1, 128, 256);
  expect_slice(packed_shard(*block, block->at("model.layers.0.mlp.down_proj.weight_scale_inv"), ParallelStyle::Row, 1, 2), 1, 1, 2);
  test::expect_error(ErrorCode::QuantUnsupported, [&] {
    packed_shard(*block, block->at("model.layers.0.mlp.down_proj.weight"), ParallelStyle::Column, 0, 4);  // 64 rows: half a block
  });
  auto channel = as_stored("fp8-channel-llama3.2-1b-redhat");
  const TensorInfo& scale = channel->at("model.layers.0.mlp.down_proj.weight_scale");
  expect_slice(packed_shard(*channel, scale, ParallelStyle::Column, 3, 4), 0, 192, 256);
  EXPECT_EQ(packed_shard(*channel, scale, ParallelStyle::Row, 3, 4).end, UINT64_MAX);
  auto bnb = as_stored("bnb-nf4-llama3.2-1b");
  test::expect_error(ErrorCode::QuantUnsupported,
                     [&] { packed_shard(*bnb, bnb->at("model.layers.0.mlp.gate_proj.weight"), ParallelStyle::Column, 0, 2); });
  // A dense catalogue has no quantization_config to split by.
  auto dense = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(
      (test::testdata_dir() / "quantized" / "gptq-falcon3-1b-int4" / "quantized.safetensors").string());
  test::expect_error(ErrorCode::QuantConfigInvalid,
                     [&] { packed_shard(*dense, dense->tensors()[0], ParallelStyle::Column, 0, 2); });
}

TEST(PackedShard, CompressedTensorsPackQuantized) {
  // 4-bit, groups of 128, asymmetric: weight_packed [64 out, 32 words of 8], zero points 8 words down each of 2 groups.
  static const std::vector<std::byte> zeros(64 * 32 * 4);
  auto tensor = [](const char* name, DType dtype, Shape shape) { return MemoryTensor{name, dtype, std::move(shape), {}, zeros.data(), nullptr}; };
  const auto source = WeightSource::from_memory("<memory>", {tensor("l.weight_packed", DType::I32, {64, 32}),
                                                             tensor("l.weight_scale", DType::BF16, {64, 2}),
                                                             tensor("l.weight_zero_point", DType::I32, {8, 2}),
                                                             tensor("l.weight_shape", DType::I64, {2})});
  const std::string config = R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0":
      {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": false}}}})";
  const auto s = source->with_metadata({{"quantization_config", config}});
  auto at = [&](const char* n) -> const TensorInfo& { return s->at(std::string("l.") + n); };
  expect_slice(packed_shard(*s, at("weight_packed"), ParallelStyle::Column, 1, 2), 0, 32, 64);
  expect_slice(packed_shard(*s, at("weight_scale"), ParallelStyle::Column, 1, 2), 0, 32, 64);
  expect_slice(packed_shard(*s, at("weight_zero_point"), ParallelStyle::Column, 1, 2), 0, 4, 8);  // 32 outputs = 4 words
  EXPECT_EQ(packed_shard(*s, at("weight_shape"), ParallelStyle::Column, 1, 2).end, UINT64_MAX);
  expect_slice(packed_shard(*s, at("weight_packed"), ParallelStyle::Row, 1, 2), 1, 16, 32);  // one group = 16 words
  expect_slice(packed_shard(*s, at("weight_scale"), ParallelStyle::Row, 1, 2), 1, 1, 2);
  expect_slice(packed_shard(*s, at("weight_zero_point"), ParallelStyle::Row, 0, 2), 1, 0, 1);
  // 4 ranks would cut a group of inputs; 16 ranks, a word of zero points (4 outputs of 8).
  const std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("weight_packed"), ParallelStyle::Row, 0, 4); });
  EXPECT_NE(m.find("would cut a group"), std::string::npos) << m;
  EXPECT_NE(m.find("weight_packed"), std::string::npos) << m;
  test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("weight_zero_point"), ParallelStyle::Column, 0, 16); });
}

TEST(PackedShard, CompressedTensorsInt8AndSparse) {
  // int-quantized, groups of 32, asymmetric: weight I8 [64 out, 128 in], scales and zero points [64, 4].
  static const std::vector<std::byte> zeros(64 * 128);
  auto tensor = [](const char* name, DType dtype, Shape shape) { return MemoryTensor{name, dtype, std::move(shape), {}, zeros.data(), nullptr}; };
  const auto source = WeightSource::from_memory("<memory>", {tensor("l.weight", DType::I8, {64, 128}),
                                                             tensor("l.weight_scale", DType::BF16, {64, 4}),
                                                             tensor("l.weight_zero_point", DType::I8, {64, 4}),
                                                             tensor("s.compressed", DType::BF16, {64, 64}),
                                                             tensor("s.bitmask", DType::U8, {64, 16})});
  const std::string config = R"({"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0":
      {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "group", "group_size": 32, "symmetric": false}}},
      "sparsity_config": {"format": "sparse-24-bitmask", "targets": ["s"]}})";
  const auto s = source->with_metadata({{"quantization_config", config}});
  auto at = [&](const char* n) -> const TensorInfo& { return s->at(n); };
  expect_slice(packed_shard(*s, at("l.weight"), ParallelStyle::Column, 1, 2), 0, 32, 64);
  expect_slice(packed_shard(*s, at("l.weight_zero_point"), ParallelStyle::Column, 1, 2), 0, 32, 64);
  expect_slice(packed_shard(*s, at("l.weight"), ParallelStyle::Row, 1, 4), 1, 32, 64);  // one group of inputs each
  expect_slice(packed_shard(*s, at("l.weight_scale"), ParallelStyle::Row, 1, 4), 1, 1, 2);
  expect_slice(packed_shard(*s, at("l.weight_zero_point"), ParallelStyle::Row, 3, 4), 1, 3, 4);
  std::string m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("l.weight"), ParallelStyle::Row, 0, 8); });
  EXPECT_NE(m.find("would cut a group"), std::string::npos) << m;
  m = test::expect_error(ErrorCode::QuantUnsupported, [&] { packed_shard(*s, at("s.compressed"), ParallelStyle::Column, 0, 2); });
  EXPECT_NE(m.find("sparse-24-bitmask"), std::string::npos) << m;
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

// Each rank reads its share of a layer's packed bytes (within 5%), whichever way it is split.
TEST(PackedShard, EachRankReadsItsShare) {
  WL_REQUIRE_TESTDATA();
  auto s = as_stored("gptq-falcon3-1b-int4");
  for (ParallelStyle style : {ParallelStyle::Column, ParallelStyle::Row})
    for (unsigned rank : {0u, 1u}) {
      uint64_t read = 0, total = 0;
      for (const TensorInfo& t : s->tensors()) {
        const Slice slice = packed_shard(*s, t, style, rank, 2);
        const Shape shape = s->slice_shape(t, slice);
        std::vector<std::byte> out(shape_numel(shape) * dtype_size(t.dtype));
        read += s->read(t, t.dtype, out.data(), slice);
        total += t.nbytes;
      }
      EXPECT_LE(read, total / 2 * 105 / 100 + 4 * 256) << "style " << static_cast<int>(style) << " rank " << rank;  // + g_idx whole
    }
}

}  // namespace
}  // namespace wl
