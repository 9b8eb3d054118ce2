#include "formats/quantized/fp4_packed.hpp"

#include <fmt/format.h>

#include "core/microscaling.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

class Fp4Decoder final : public LayerDecoder {
 public:
  Fp4Decoder(std::string name, const TensorInfo& packed, uint64_t group, bool e8m0, std::vector<SideRead> side)
      : LayerDecoder(std::move(name), packed, packed.shape[0], packed.shape[1] * 2, std::move(side)),
        in_(packed.shape[1] * 2), group_(group), e8m0_(e8m0) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    scales_.resize(side[0].numel());
    if (e8m0_) {  // decompress_mx_scale: 2.0 ** (s - 127), 2^128 overflowing to inf
      const auto* s = reinterpret_cast<const uint8_t*>(side[0].raw());
      for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = mx::exp2i(s[k] - 127);
      return;
    }
    const auto* s = reinterpret_cast<const float*>(side[0].raw());
    const float global = *reinterpret_cast<const float*>(side[1].raw());
    for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = s[k] / global;  // _dequantize: scale / global_scale, in F32
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* q = reinterpret_cast<const uint8_t*>(packed);
    const uint64_t groups = in_ / group_;
    for (uint64_t o = row0; o < row1; ++o) {
      const uint8_t* row = q + o * in_ / 2;
      const float* s = scales_.data() + o * groups;
      for (uint64_t i = 0; i < in_; ++i) *out++ = mx::kE2m1[(row[i / 2] >> ((i & 1) * 4)) & 0x0F] * s[i / group_];
    }
  }
  uint64_t in_, group_;
  bool e8m0_;
  mutable std::vector<float> scales_;
};

}  // namespace

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
  auto decoder = std::make_shared<Fp4Decoder>(mx ? "CT-MXFP4" : "CT-NVFP4", packed, group, mx, std::move(side));
  layer.dense = dense_entry(prefix + ".weight", packed, {out, in}, decoder);
  for (const char* extra : {".input_global_scale", ".input_scale"})
    if (const TensorInfo* t = raw->find(prefix + extra)) layer.stored.push_back(t->name);
  return layer;
}

}  // namespace wl::quant
