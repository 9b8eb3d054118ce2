// compressed-tensors sparse layers against what compressed-tensors computes, from its last version
// with sparse compressors (vllm-project/compressed-tensors at 927f6d5f^; it removed them in #610):
// compressors/sparse_compressors/sparse_bitmask.py, sparse_24_bitmask.py and utils/helpers.py (numpy's
// packbits / unpackbits with bitorder little), run under Debian's torch outside this repository.
//   sparse-bitmask: the values, bitmask and row offsets of a pruned BF16 [3, 20] weight as its
//   bitmask_compress writes them (rows not a multiple of 8 wide), the dense weight its
//   bitmask_decompress gives back.
//   sparse-24-bitmask: random weights through its sparse24_bitmask_compress (top two of each four
//   by magnitude) and back through sparse24_bitmask_decompress — BF16 [3, 20]; FP8 e4m3 bytes
//   [4, 16] and int8 [4, 8] with BF16 per-channel scales, the dense weights then by
//   quantization/lifecycle/forward.py's dequantize (at ac8e2ba8, in the scale's dtype) of the
//   decompressed values, as its ModelCompressor composes the two (sparsity over quantization).
#include <gtest/gtest.h>

#include <cstring>

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

// The layer's tensors under `base` (compressed-tensors named them `l.weight.*` before its #219, `l.*` since).
std::unique_ptr<WeightSource> view_of(const Layer& l, const std::string& base = "l.weight", const QuantConfig& config = sparse_config()) {
  auto t = [&](const char* name, DType dtype, Shape shape, const void* data) {
    return MemoryTensor{base + name, dtype, std::move(shape), {}, data, nullptr};
  };
  return dense_view(WeightSource::from_memory("<memory>", {t(".compressed", DType::BF16, {l.values.size()}, l.values.data()),
                                                           t(".bitmask", DType::U8, {3, 3}, l.bitmask.data()),
                                                           t(".row_offsets", DType::I64, {3}, l.offsets.data()),
                                                           t(".shape", DType::I64, {2}, l.shape)}),
                    config, true);
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

TEST(SparseBitmask, TheNamingSinceCompressedTensors219HasNoWeightInfix) {
  const Layer l;
  auto view = view_of(l, "l");
  ASSERT_EQ(view->tensors().size(), 1u);
  const TensorView got = view->load(view->at("l.weight"), DType::BF16);
  const auto* bits = reinterpret_cast<const uint16_t*>(got.raw());
  EXPECT_EQ(std::vector<uint16_t>(bits, bits + got.numel()), kDense);
}

// A 2:4 layer "l" as compressed-tensors' Sparse24BitMaskTensor.dict names it (since #219), with the
// quantized case's scale and an input_scale beside it.
struct TwoFour {
  const char* what;
  DType values_dtype;
  uint64_t rows, cols;
  std::vector<uint16_t> values;  // the values' bits, one element each
  std::vector<uint8_t> bitmask;
  std::vector<uint16_t> scale;   // BF16 per row; empty: the values are the weight
  std::vector<uint16_t> dense;   // BF16
};

const std::vector<TwoFour>& two_four_cases() {
  static const std::vector<TwoFour> all{
      {"BF16", DType::BF16, 3, 20,
       {
     0xbfc5, 0xbf9c, 0x400b, 0xbfd3, 0x3f38, 0x3f67, 0x3fb7, 0x3fa8, 0xbf98, 0x3f57, 0x3ed4, 0xbf22,
     0xc00c, 0xbf69, 0x3f05, 0x3fd8, 0xbf75, 0x4028, 0xbfef, 0x3f82, 0xc036, 0x3fc3, 0x3fa1, 0x3f9c,
     0x3e53, 0xbfa4, 0xbf26, 0xbf38, 0xbeed, 0xbfcd}, {
     0x99, 0x93, 0x03, 0x96, 0xc6, 0x05, 0xc5, 0x66, 0x05}, {}, {
     0xbfc5, 0x0000, 0x0000, 0xbf9c, 0x400b, 0x0000, 0x0000, 0xbfd3, 0x3f38, 0x3f67, 0x0000, 0x0000,
     0x3fb7, 0x0000, 0x0000, 0x3fa8, 0xbf98, 0x3f57, 0x0000, 0x0000, 0x0000, 0x3ed4, 0xbf22, 0x0000,
     0xc00c, 0x0000, 0x0000, 0xbf69, 0x0000, 0x3f05, 0x3fd8, 0x0000, 0x0000, 0x0000, 0xbf75, 0x4028,
     0xbfef, 0x0000, 0x3f82, 0x0000, 0xc036, 0x0000, 0x3fc3, 0x0000, 0x0000, 0x0000, 0x3fa1, 0x3f9c,
     0x0000, 0x3e53, 0xbfa4, 0x0000, 0x0000, 0xbf26, 0xbf38, 0x0000, 0xbeed, 0x0000, 0xbfcd, 0x0000}},
      {"FP8 e4m3 values, BF16 channel scales", DType::F8_E4M3, 4, 16,
       {
     0xe8, 0x9c, 0xd1, 0xd9, 0xe1, 0xec, 0xd7, 0xc6, 0xf0, 0xc5, 0x86, 0x7c,
     0x65, 0xf2, 0x94, 0xba, 0xd1, 0xab, 0xa4, 0xfb, 0xdb, 0xe9, 0xd2, 0x83,
     0xfe, 0xe5, 0xc6, 0xdc, 0xe7, 0xf1, 0xf3, 0xf8}, {
     0x55, 0x35, 0x5a, 0x63, 0x3c, 0x99, 0x56, 0x35}, {
     0x3c9a, 0x3c47, 0x3c7a, 0x3c44}, {
     0xbf9a, 0x0000, 0xbae7, 0x0000, 0xbe2d, 0x0000, 0xbead, 0x0000, 0xbf2d, 0x0000, 0xbfe7, 0x0000,
     0xbe90, 0xbd87, 0x0000, 0x0000, 0x0000, 0xbfc7, 0x0000, 0xbd22, 0xb915, 0x0000, 0x4095, 0x0000,
     0x3f22, 0xbff9, 0x0000, 0x0000, 0x0000, 0xba15, 0xbc79, 0x0000, 0x0000, 0x0000, 0xbe0d, 0xbbac,
     0xbb3c, 0xc0ac, 0x0000, 0x0000, 0xbeac, 0x0000, 0x0000, 0xbf8d, 0xbe1c, 0x0000, 0x0000, 0xb8bc,
     0x0000, 0xc0ac, 0xbf1f, 0x0000, 0xbd2c, 0x0000, 0xbe93, 0x0000, 0xbf38, 0x0000, 0xbfdc, 0x0000,
     0xc007, 0xc044, 0x0000, 0x0000}},
      {"int8 values, BF16 channel scales", DType::I8, 4, 8,
       {
     0xcb, 0x50, 0xb5, 0xa3, 0x82, 0x94, 0x61, 0x47, 0x60, 0x66, 0xbf, 0x28,
     0x89, 0x50, 0x7d, 0x70}, {
     0x6c, 0x36, 0xcc, 0xc6}, {
     0x3c03, 0x3ad0, 0x3c2b, 0x3b3c}, {
     0x0000, 0x0000, 0xbed9, 0x3f24, 0x0000, 0xbf1a, 0xbf3e, 0x0000, 0x0000, 0xbe4d, 0xbe30, 0x0000,
     0x3e1e, 0x3de7, 0x0000, 0x0000, 0x0000, 0x0000, 0x3f80, 0x3f88, 0x0000, 0x0000, 0xbf2e, 0x3ed6,
     0x0000, 0xbeaf, 0x3e6b, 0x0000, 0x0000, 0x0000, 0x3eb8, 0x3ea4}},
  };
  return all;
}

QuantConfig two_four_config(const TwoFour& c) {
  QuantConfig q = sparse_config();
  q.ct_sparsity = "sparse-24-bitmask";
  if (!c.scale.empty()) q.ct_format = c.values_dtype == DType::I8 ? "int-quantized" : "float-quantized", q.bits = 8, q.ct_strategy = "channel";
  return q;
}

std::unique_ptr<WeightSource> two_four_source(const TwoFour& c, std::vector<std::vector<std::byte>>& storage) {
  auto bytes = [&](const void* p, size_t n) {
    storage.emplace_back(n);
    std::memcpy(storage.back().data(), p, n);
    return storage.back().data();
  };
  const size_t size = dtype_size(c.values_dtype);
  std::vector<std::byte> values(c.values.size() * size);
  for (size_t k = 0; k < c.values.size(); ++k) std::memcpy(values.data() + k * size, &c.values[k], size);  // little-endian
  const int64_t shape[2] = {static_cast<int64_t>(c.rows), static_cast<int64_t>(c.cols)};
  std::vector<MemoryTensor> t{{"l.compressed", c.values_dtype, {c.rows, c.values.size() / c.rows}, {}, bytes(values.data(), values.size()), nullptr},
                              {"l.bitmask", DType::U8, {c.rows, (c.cols + 7) / 8}, {}, bytes(c.bitmask.data(), c.bitmask.size()), nullptr},
                              {"l.shape", DType::I64, {2, 1}, {}, bytes(shape, sizeof shape), nullptr}};
  const uint16_t input_scale = 0x3c00;
  if (!c.scale.empty()) {
    t.push_back({"l.weight_scale", DType::BF16, {c.rows, 1}, {}, bytes(c.scale.data(), c.scale.size() * 2), nullptr});
    t.push_back({"l.input_scale", DType::BF16, {1}, {}, bytes(&input_scale, 2), nullptr});
  }
  return WeightSource::from_memory("<memory>", t);
}

TEST(SparseBitmask, TwoFourDecompressesAndDequantizesAsCompressedTensors) {
  for (const TwoFour& c : two_four_cases()) {
    SCOPED_TRACE(c.what);
    std::vector<std::vector<std::byte>> storage;
    auto view = dense_view(two_four_source(c, storage), two_four_config(c), true);
    ASSERT_EQ(view->tensors().size(), 1u);  // values, bitmask, shape and scales stand for one weight
    EXPECT_EQ(view->at("l.weight").shape, (Shape{c.rows, c.cols}));
    const TensorView got = view->load(view->at("l.weight"), DType::BF16);
    const auto* bits = reinterpret_cast<const uint16_t*>(got.raw());
    EXPECT_EQ(std::vector<uint16_t>(bits, bits + got.numel()), c.dense);
    std::vector<uint16_t> last(c.cols);  // a rank's rows decode on their own
    view->read(view->at("l.weight"), DType::BF16, last.data(), Slice{0, c.rows - 1, c.rows});
    EXPECT_EQ(last, std::vector<uint16_t>(c.dense.end() - static_cast<ptrdiff_t>(c.cols), c.dense.end()));
  }
}

TEST(SparseBitmask, TwoFourLayersThatBreakTheFormatNameTheTensorAndTheRule) {
  struct Hostile {
    const char* what;
    size_t base;
    void (*change)(TwoFour&);
    const char* tensor;
  };
  const Hostile hostile[] = {
      {"three kept of four, one of the next", 0, [](TwoFour& c) { c.bitmask[0] = 0x17; }, "l.bitmask"},
      {"quantized values without their scale", 1, [](TwoFour& c) { c.scale.clear(); }, "l.weight_scale"},
      {"each row a value short", 0, [](TwoFour& c) { c.values.resize(c.values.size() - c.rows); }, "l.compressed"},
  };
  for (const Hostile& h : hostile) {
    SCOPED_TRACE(h.what);
    TwoFour c = two_four_cases()[h.base];
    const QuantConfig config = two_four_config(c);
    h.change(c);
    std::vector<std::vector<std::byte>> storage;
    const std::string msg = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] {
      auto view = dense_view(two_four_source(c, storage), config, true);
      view->load(view->at("l.weight"), DType::F32);
    });
    EXPECT_NE(msg.find(h.tensor), std::string::npos) << msg;
  }
}

TEST(SparseBitmask, TheConfigSaysSoAndOtherSparsitiesAreNamed) {
  const QuantConfig c = parse_quant_config(nlohmann::json::parse(R"({"quant_method": "compressed-tensors", "format": "dense",
      "sparsity_config": {"format": "sparse-bitmask", "sparsity_structure": "unstructured", "targets": ["Linear"]}})"), "config.json");
  EXPECT_EQ(c.ct_sparsity, "sparse-bitmask");
  EXPECT_NE(c.describe().find("sparse-bitmask sparsity"), std::string::npos) << c.describe();
  QuantConfig marlin = sparse_config();
  marlin.ct_sparsity = "marlin-24";
  const Layer l;
  const std::string msg = test::expect_error(ErrorCode::QuantUnsupported, [&] { view_of(l, "l", marlin); });
  EXPECT_NE(msg.find("marlin-24"), std::string::npos) << msg;
  // Sparsity stored dense (2:4 models as plain weights) is nothing to decode.
  QuantConfig dense = sparse_config();
  dense.ct_sparsity = "dense";
  const float w[4] = {1, 0, 0, 2};
  auto view = dense_view(WeightSource::from_memory("<memory>", {MemoryTensor{"l.weight", DType::F32, {1, 4}, {}, w, nullptr}}), dense, true);
  EXPECT_EQ(view->at("l.weight").dtype, DType::F32);
}

}  // namespace
}  // namespace wl::quant
