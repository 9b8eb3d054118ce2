// Quantized layers whose tensors disagree: each a clear error naming the tensor and the rule.
#include <gtest/gtest.h>

#include "formats/quantized/dense_view.hpp"
#include "test_util.hpp"

namespace wl::quant {
namespace {

// In-memory tensors of given dtypes and shapes (zero-filled unless given bytes).
class Tensors {
 public:
  Tensors& add(const std::string& name, DType dtype, Shape shape, std::string bytes = {}) {
    auto data = std::make_shared<std::string>(bytes.empty() ? std::string(shape_numel(shape) * dtype_size(dtype), '\0') : bytes);
    tensors_.push_back({name, dtype, std::move(shape), {}, data->data(), data});
    return *this;
  }
  std::shared_ptr<const WeightSource> source() const { return WeightSource::from_memory("<memory>", tensors_); }

 private:
  std::vector<MemoryTensor> tensors_;
};

QuantConfig gptq4(int64_t group = 128, bool desc_act = false) {
  QuantConfig c;
  c.method = Method::Gptq, c.bits = 4, c.group_size = group, c.desc_act = desc_act, c.origin = "config.json";
  return c;
}

// A consistent GPTQ 4-bit layer [out 16, in 256] of two groups, or with tensor `bad` of another shape or dtype.
Tensors gptq_layer(const std::string& bad = {}, Shape bad_shape = {}, DType bad_dtype = DType::I32) {
  Tensors t;
  auto add = [&](const std::string& n, DType d, Shape s) {
    if (n == bad) t.add("l." + n, bad_dtype, bad_shape);
    else t.add("l." + n, d, s);
  };
  add("qweight", DType::I32, {32, 16});
  add("qzeros", DType::I32, {2, 2});
  add("scales", DType::F16, {2, 16});
  add("g_idx", DType::I32, {256});
  return t;
}

std::string error_of(ErrorCode code, const Tensors& t, const QuantConfig& c) {
  return test::expect_error(code, [&] { dense_view(t.source(), c, true); });
}

TEST(QuantizedHostile, ConsistentGptqLayerIsOneDenseWeight) {
  auto view = dense_view(gptq_layer().source(), gptq4(), true);
  ASSERT_EQ(view->tensors().size(), 1u);
  EXPECT_EQ(view->tensors()[0].name, "l.weight");
  EXPECT_EQ(view->tensors()[0].shape, (Shape{16, 256}));
}

TEST(QuantizedHostile, GptqShapesThatDisagree) {
  std::string m = error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer("scales", {3, 16}, DType::F16), gptq4());
  EXPECT_NE(m.find("l.scales"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 16]"), std::string::npos) << m;
  m = error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer("qzeros", {2, 4}), gptq4());
  EXPECT_NE(m.find("l.qzeros"), std::string::npos) << m;
  m = error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer("g_idx", {128}), gptq4());
  EXPECT_NE(m.find("g_idx"), std::string::npos) << m;
  m = error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer("scales", {2, 16}, DType::I32), gptq4());
  EXPECT_NE(m.find("F16/BF16/F32"), std::string::npos) << m;
  Tensors missing;
  missing.add("l.qweight", DType::I32, {32, 16}).add("l.scales", DType::F16, {2, 16});
  m = error_of(ErrorCode::QuantTensorsInconsistent, missing, gptq4());
  EXPECT_NE(m.find("no tensor 'l.qzeros'"), std::string::npos) << m;
}

TEST(QuantizedHostile, GroupSizeThatDoesNotDivide) {
  const std::string m = error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer(), gptq4(96));
  EXPECT_NE(m.find("group_size 96 does not divide the 256 input features"), std::string::npos) << m;
}

TEST(QuantizedHostile, GIdxOutsideTheGroups) {
  std::vector<int32_t> g(256, 0);
  g[17] = 2;  // only groups 0 and 1 have scales
  Tensors t;
  t.add("l.qweight", DType::I32, {32, 16}).add("l.qzeros", DType::I32, {2, 2}).add("l.scales", DType::F16, {2, 16});
  t.add("l.g_idx", DType::I32, {256}, std::string(reinterpret_cast<const char*>(g.data()), g.size() * 4));
  auto view = dense_view(t.source(), gptq4(128, true), true);
  const std::string m = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] { view->load(view->tensors()[0]); });
  EXPECT_NE(m.find("g_idx[17] = 2"), std::string::npos) << m;
}

TEST(QuantizedHostile, BitsOutsideTheMethod) {
  QuantConfig c = gptq4();
  c.bits = 3;
  test::expect_error(ErrorCode::QuantUnsupported, [&] { dense_view(gptq_layer().source(), c, true); });
  c.bits = 8;  // 8-bit packs 4 inputs per word: 32 rows are 128 inputs, so the 2 groups of 128 do not fit
  error_of(ErrorCode::QuantTensorsInconsistent, gptq_layer(), c);
}

TEST(QuantizedHostile, ConfigThatContradictsTheTensors) {
  QuantConfig fp8;
  fp8.method = Method::Fp8, fp8.bits = 8, fp8.origin = "config.json";
  std::string m = error_of(ErrorCode::QuantConfigInvalid, gptq_layer(), fp8);
  EXPECT_NE(m.find("says fp8"), std::string::npos) << m;
  EXPECT_NE(m.find("l.qweight"), std::string::npos) << m;
  Tensors dense;
  dense.add("l.weight", DType::BF16, {4, 4});
  m = error_of(ErrorCode::QuantConfigInvalid, dense, gptq4());
  EXPECT_NE(m.find("no tensor of the checkpoint is quantized that way"), std::string::npos) << m;
  EXPECT_EQ(dense_view(dense.source(), gptq4(), false)->tensors().size(), 1u);  // a config beside: left as it is
}

TEST(QuantizedHostile, Fp8ScalesOfNoKnownGranularity) {
  QuantConfig c;
  c.method = Method::Fp8, c.bits = 8, c.origin = "config.json";
  Tensors t;
  t.add("l.weight", DType::F8_E4M3, {256, 256}).add("l.weight_scale_inv", DType::BF16, {2, 2});
  const std::string m = error_of(ErrorCode::QuantTensorsInconsistent, t, c);
  EXPECT_NE(m.find("l.weight_scale_inv"), std::string::npos) << m;
  c.fp8_block = {128, 128};
  EXPECT_EQ(dense_view(t.source(), c, true)->tensors()[0].stored_type(), "FP8-E4M3-block128x128");
  c.fp8_block = {64, 64};
  error_of(ErrorCode::QuantTensorsInconsistent, t, c);
}

TEST(QuantizedHostile, BnbStateThatDisagrees) {
  QuantConfig c;
  c.method = Method::Bnb4, c.bits = 4, c.bnb_quant_type = "nf4", c.origin = "config.json";
  auto layer = [](const std::string& state, Shape weight) {
    Tensors t;
    t.add("l.weight", DType::U8, std::move(weight)).add("l.weight.absmax", DType::F32, {2}).add("l.weight.quant_map", DType::F32, {16});
    t.add("l.weight.quant_state.bitsandbytes__nf4", DType::U8, {state.size()}, state);
    return t;
  };
  const std::string ok = R"({"quant_type": "nf4", "blocksize": 64, "shape": [8, 16]})";
  EXPECT_EQ(dense_view(layer(ok, {64, 1}).source(), c, true)->tensors()[0].shape, (Shape{8, 16}));
  std::string m = error_of(ErrorCode::QuantTensorsInconsistent, layer(ok, {32, 1}), c);
  EXPECT_NE(m.find("packs into 64 U8 bytes"), std::string::npos) << m;
  m = error_of(ErrorCode::QuantTensorsInconsistent, layer(R"({"quant_type": "fp4", "shape": [8, 16]})", {64, 1}), c);
  EXPECT_NE(m.find("quant_type 'fp4'"), std::string::npos) << m;
  error_of(ErrorCode::QuantTensorsInconsistent, layer("not json", {64, 1}), c);
  error_of(ErrorCode::QuantTensorsInconsistent, layer(R"({"quant_type": "nf4", "blocksize": 32, "shape": [8, 16]})", {64, 1}), c);
}

}  // namespace
}  // namespace wl::quant
