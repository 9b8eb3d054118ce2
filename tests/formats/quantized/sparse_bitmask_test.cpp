// compressed-tensors sparse-bitmask layers against what compressed-tensors computes: the values,
// bitmask and row offsets of a pruned BF16 [3, 20] weight as its bitmask_compress writes them (rows
// not a multiple of 8 wide), and the dense weight its bitmask_decompress gives back
// (compressors/sparse_compressors/sparse_bitmask.py and utils/helpers.py of
// vllm-project/compressed-tensors at 927f6d5f^, the last version with sparse compressors: numpy's
// packbits / unpackbits with bitorder little; run under Debian's torch outside this repository).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/quantized/dense_view.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {
namespace {

struct Layer {
  std::vector<uint16_t> values{0xbd9d, 0x3eb8, 0xbf48, 0x3d92, 0xbfcc, 0xbd54, 0x3e7e, 0x3ed5, 0x3f6e, 0xbf04,
                               0xbfd3, 0x3f06, 0x3f10, 0x4010, 0x3fef, 0x3f7f, 0xbef4, 0xbeb2, 0x3eb3, 0xbe8b,
                               0x3e11, 0x3f2e, 0x3e50, 0x3ed8, 0xbf9c, 0xbea9, 0xbed9, 0x3f03, 0xbefa};
  std::vector<uint8_t> bitmask{0x8f, 0x85, 0x0e, 0x72, 0xd1, 0x00, 0x1b, 0xe4, 0x09};
  std::vector<int64_t> offsets{0, 11, 19};
  int64_t shape[2] = {3, 20};
};

const std::vector<uint16_t> kDense{
    0xbd9d, 0x3eb8, 0xbf48, 0x3d92, 0x0000, 0x0000, 0x0000, 0xbfcc, 0xbd54, 0x0000, 0x3e7e, 0x0000, 0x0000, 0x0000, 0x0000,
    0x3ed5, 0x0000, 0x3f6e, 0xbf04, 0xbfd3, 0x0000, 0x3f06, 0x0000, 0x0000, 0x3f10, 0x4010, 0x3fef, 0x0000, 0x3f7f, 0x0000,
    0x0000, 0x0000, 0xbef4, 0x0000, 0xbeb2, 0x3eb3, 0x0000, 0x0000, 0x0000, 0x0000, 0xbe8b, 0x3e11, 0x0000, 0x3f2e, 0x3e50,
    0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x3ed8, 0x0000, 0x0000, 0xbf9c, 0xbea9, 0xbed9, 0x3f03, 0x0000, 0x0000, 0xbefa};

QuantConfig sparse_config() {
  QuantConfig c;
  c.method = Method::CompressedTensors, c.ct_format = "dense", c.ct_sparsity = "sparse-bitmask", c.origin = "config.json";
  return c;
}

std::unique_ptr<WeightSource> view_of(const Layer& l) {
  auto t = [](const char* name, DType dtype, Shape shape, const void* data) { return MemoryTensor{name, dtype, std::move(shape), {}, data, nullptr}; };
  return dense_view(WeightSource::from_memory("<memory>", {t("l.weight.compressed", DType::BF16, {l.values.size()}, l.values.data()),
                                                           t("l.weight.bitmask", DType::U8, {3, 3}, l.bitmask.data()),
                                                           t("l.weight.row_offsets", DType::I64, {3}, l.offsets.data()),
                                                           t("l.weight.shape", DType::I64, {2}, l.shape)}),
                    sparse_config(), true);
}

TEST(SparseBitmask, DecompressesAsCompressedTensors) {
  const Layer l;
  auto view = view_of(l);
  ASSERT_EQ(view->tensors().size(), 1u);
  EXPECT_EQ(view->at("l.weight").shape, (Shape{3, 20}));
  const TensorView got = view->load(view->at("l.weight"), DType::BF16);
  const auto* bits = reinterpret_cast<const uint16_t*>(got.raw());
  EXPECT_EQ(std::vector<uint16_t>(bits, bits + got.numel()), kDense);
  // Rows are decoded on their own: a slice (a tensor-parallel rank's rows) equals the dense rows.
  std::vector<uint16_t> row2(20);
  view->read(view->at("l.weight"), DType::BF16, row2.data(), Slice{0, 2, 3});
  EXPECT_EQ(row2, std::vector<uint16_t>(kDense.begin() + 40, kDense.end()));
}

TEST(SparseBitmask, InconsistentLayersNameTheTensorAndTheRule) {
  Layer offsets;
  offsets.offsets[1] = 12;
  Layer count;
  count.bitmask[8] |= 0x80;  // a bit past the row's end is not a value; one more inside the row is
  count.bitmask[7] |= 0x01;
  for (const Layer* l : {&offsets, &count}) {
    const std::string msg = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] {
      auto view = view_of(*l);
      view->load(view->at("l.weight"), DType::F32);
    });
    EXPECT_NE(msg.find("l.weight.bitmask"), std::string::npos) << msg;
  }
}

TEST(SparseBitmask, TheConfigSaysSoAndOtherSparsitiesAreNamed) {
  const QuantConfig c = parse_quant_config(nlohmann::json::parse(R"({"quant_method": "compressed-tensors", "format": "dense",
      "sparsity_config": {"format": "sparse-bitmask", "sparsity_structure": "unstructured", "targets": ["Linear"]}})"), "config.json");
  EXPECT_EQ(c.ct_sparsity, "sparse-bitmask");
  EXPECT_NE(c.describe().find("sparse-bitmask sparsity"), std::string::npos) << c.describe();
  QuantConfig two_four = sparse_config();
  two_four.ct_sparsity = "sparse-24-bitmask";
  const Layer l;
  const std::string msg = test::expect_error(ErrorCode::QuantUnsupported, [&] {
    dense_view(WeightSource::from_memory("<memory>", {MemoryTensor{"l.weight.bitmask", DType::U8, {3, 3}, {}, l.bitmask.data(), nullptr}}),
               two_four, true);
  });
  EXPECT_NE(msg.find("sparse-24-bitmask"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl::quant
