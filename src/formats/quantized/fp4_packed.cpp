// FP4 (E2M1) values packed two a byte along each row, low nibble first, with a scale per group of
// `group_size` inputs, dense as each producer's own library computes it: W = f32(e2m1(q)) · scale.
// compressed-tensors (its NVFP4PackedCompressor and MXFP4PackedCompressor): weight_packed U8
// [out, in / 2] with weight_scale [out, in / group_size]: nvfp4-pack-quantized's F8_E4M3 (or
// BF16/F16/F32) scales divided in F32 by weight_global_scale F32 [1]; mxfp4-pack-quantized's U8 E8M0
// exponents, 2^(s - 127).
// NVIDIA ModelOpt's NVFP4 export: weight U8 [out, in / 2] with weight_scale F8_E4M3 [out, in / 16]
// multiplied in F32 by weight_scale_2 F32 [] (NVFP4QTensor.dequantize: the scales times the second
// scale first, then the values times them; its E2M1 table has +0 for code 8, where E2M1 has -0);
// input_scale is for activations and is hidden too.
#include "formats/quantized/layer_kind.hpp"

#include <array>

#include <fmt/format.h>

#include "core/microscaling.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

// ModelOpt's e2m1_values: code 8 (E2M1's -0) decodes as +0 there.
constexpr std::array<float, 16> kModeloptE2m1 = [] {
  std::array<float, 16> t = mx::kE2m1;
  t[8] = 0.0f;
  return t;
}();

// How a group's scale is made from the side tensors (side[0]: the group scales; side[1]: the layer's).
enum class ScaleRule {
  E8m0,            // compressed-tensors' decompress_mx_scale: 2.0 ** (s - 127), 2^128 overflowing to inf
  DividedByGlobal, // compressed-tensors' _dequantize: scale / global_scale, in F32
  TimesSecond,     // ModelOpt's NVFP4QTensor.dequantize: scale * weight_scale_2, in F32 (and its E2M1 table)
};

class Fp4Decoder final : public LayerDecoder {
 public:
  Fp4Decoder(std::string name, const TensorInfo& packed, uint64_t group, ScaleRule rule, std::vector<SideRead> side)
      : LayerDecoder(std::move(name), packed, packed.shape[0], packed.shape[1] * 2, std::move(side)),
        in_(packed.shape[1] * 2), group_(group), rule_(rule), values_(rule == ScaleRule::TimesSecond ? kModeloptE2m1 : mx::kE2m1) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    scales_.resize(side[0].numel());
    if (rule_ == ScaleRule::E8m0) {
      const auto* s = reinterpret_cast<const uint8_t*>(side[0].raw());
      for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = mx::exp2i(s[k] - 127);
      return;
    }
    const auto* s = reinterpret_cast<const float*>(side[0].raw());
    const float layer = *reinterpret_cast<const float*>(side[1].raw());
    for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = rule_ == ScaleRule::DividedByGlobal ? s[k] / layer : s[k] * layer;
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* q = reinterpret_cast<const uint8_t*>(packed);
    const uint64_t groups = in_ / group_;
    for (uint64_t o = row0; o < row1; ++o) {
      const uint8_t* row = q + o * in_ / 2;
      const float* s = scales_.data() + o * groups;
      for (uint64_t i = 0; i < in_; ++i) *out++ = values_[(row[i / 2] >> ((i & 1) * 4)) & 0x0F] * s[i / group_];
    }
  }
  uint64_t in_, group_;
  ScaleRule rule_;
  const std::array<float, 16>& values_;
  mutable std::vector<float> scales_;
};

QuantLayer fp4_packed_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& packed = layer_tensor(*raw, prefix + ".weight_packed", prefix);
  const TensorInfo& scale = layer_tensor(*raw, prefix + ".weight_scale", prefix);
  const bool mx = c.ct_format == "mxfp4-pack-quantized";
  expect_tensor(packed, {0, 0}, {DType::U8}, fmt::format("{}'s weight_packed (two FP4 values a byte)", c.ct_format));
  if (const TensorInfo* zero = raw->find(prefix + ".weight_zero_point"))  // its compressors pack symmetric FP4 only
    throw Error(ErrorCode::QuantUnsupported, fmt::format("{} with a zero point is not decoded (symmetric only)", c.ct_format), {},
                zero->name);
  if (c.group_size <= 0)
    throw Error(ErrorCode::QuantConfigInvalid, fmt::format("{}: {} without a group_size", c.origin, c.ct_format), {}, packed.name);
  const uint64_t out = packed.shape[0], in = packed.shape[1] * 2, group = static_cast<uint64_t>(c.group_size);
  if (in % group != 0)
    inconsistent(packed, fmt::format("is {}: rows of {} FP4 values do not split into groups of {}", shape_to_string(packed.shape), in, group));
  const std::string rule = fmt::format("for weight_packed {} (groups of {}) the {} scales", shape_to_string(packed.shape), group,
                                       mx ? "E8M0" : "FP8");
  if (mx) expect_tensor(scale, {out, in / group}, {DType::U8}, rule);
  else expect_tensor(scale, {out, in / group}, {DType::F8_E4M3, DType::BF16, DType::F16, DType::F32}, rule);
  std::vector<SideRead> side{{scale, mx ? DType::U8 : DType::F32}};
  QuantLayer layer{{}, {packed.name, scale.name}};
  if (!mx) {
    const TensorInfo& global = layer_tensor(*raw, prefix + ".weight_global_scale", prefix);
    expect_tensor(global, {1}, {DType::F32}, "weight_global_scale, the divisor of the FP8 scales,");
    side.push_back({global, DType::F32});
    layer.stored.push_back(global.name);
  }
  auto decoder = std::make_shared<Fp4Decoder>(mx ? "CT-MXFP4" : "CT-NVFP4", packed, group, mx ? ScaleRule::E8m0 : ScaleRule::DividedByGlobal,
                                              std::move(side));
  layer.dense = dense_entry(prefix + ".weight", packed, {out, in}, decoder);
  for (const char* extra : {".input_global_scale", ".input_scale"})
    if (const TensorInfo* t = raw->find(prefix + extra)) layer.stored.push_back(t->name);
  return layer;
}

QuantLayer modelopt_nvfp4_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& packed = layer_tensor(*raw, prefix + ".weight", prefix);
  const TensorInfo& scale = layer_tensor(*raw, prefix + ".weight_scale", prefix);
  const TensorInfo& second = layer_tensor(*raw, prefix + ".weight_scale_2", prefix);
  expect_tensor(packed, {0, 0}, {DType::U8}, "a ModelOpt NVFP4 weight (two FP4 values a byte)");
  const uint64_t out = packed.shape[0], in = packed.shape[1] * 2, group = static_cast<uint64_t>(c.group_size);
  if (in % group != 0)
    inconsistent(packed, fmt::format("is {}: rows of {} FP4 values do not split into groups of {}", shape_to_string(packed.shape), in, group));
  expect_tensor(scale, {out, in / group}, {DType::F8_E4M3},
                fmt::format("for weight {} (groups of {}) the FP8 scales", shape_to_string(packed.shape), group));
  if (second.numel() != 1 || second.dtype != DType::F32)
    inconsistent(second, fmt::format("is {} {}: weight_scale_2, the FP8 scales' multiplier, is one F32", dtype_name(second.dtype),
                                     shape_to_string(second.shape)));
  auto decoder = std::make_shared<Fp4Decoder>("MODELOPT-NVFP4", packed, group, ScaleRule::TimesSecond,
                                              std::vector<SideRead>{{scale, DType::F32}, {second, DType::F32}});
  QuantLayer layer{dense_entry(prefix + ".weight", packed, {out, in}, decoder), {packed.name, scale.name, second.name}};
  if (const TensorInfo* input = raw->find(prefix + ".input_scale")) layer.stored.push_back(input->name);
  return layer;
}

}  // namespace

extern const LayerKind kCtFp4Kind{
    "compressed-tensors FP4 pack-quantized (weight_packed)",
    [](const WeightSource&, const TensorInfo& t, std::string& prefix, std::string&) { return strip_suffix(t.name, ".weight_packed", prefix); },
    [](const QuantConfig& c) { return c.method == Method::CompressedTensors && c.ct_format.ends_with("fp4-pack-quantized"); },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) { return fp4_packed_layer(raw, prefix, c); }};

// ModelOpt's NVFP4 layers: a U8 weight beside its weight_scale_2.
extern const LayerKind kModeloptNvfp4Kind{
    "ModelOpt NVFP4 (U8 weight with weight_scale and weight_scale_2)",
    [](const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string&) {
      std::string layer;
      if (!strip_suffix(t.name, ".weight_scale_2", layer)) return false;
      const TensorInfo* w = raw.find(layer + ".weight");
      if (!w || w->dtype != DType::U8) return false;
      prefix = layer;
      return true;
    },
    [](const QuantConfig& c) { return c.method == Method::Modelopt && c.modelopt_algo == "NVFP4"; },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) { return modelopt_nvfp4_layer(raw, prefix, c); }};

}  // namespace wl::quant
