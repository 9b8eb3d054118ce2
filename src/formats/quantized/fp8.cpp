// FP8 e4m3fn weights with their scales (transformers' "fp8", compressed-tensors' float-quantized).
// `<prefix>.weight` F8_E4M3 [out, in] times `scale_name` (weight_scale_inv or weight_scale, both
// multiplied), one value per tensor ([] or [1]), per output row ([out] or [out, 1]) or per block
// ([ceil(out / rows), ceil(in / cols)] with the config's block size) or per group of the config's
// group_size inputs ([out, ceil(in / group_size)]): W = f32(q) · f32(s). U8 group scales are
// compressed-tensors' mxfp8-quantized E8M0 exponents: s = 2^(e - 127).
// `<prefix>.input_scale` (for activations) has no dense counterpart and is hidden too.
#include "formats/quantized/layer_kind.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/microscaling.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

// e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
float e4m3_value(uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 · 2^-6
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = e4m3_value(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

class Fp8Decoder final : public LayerDecoder {
 public:
  Fp8Decoder(std::string name, const TensorInfo& weight, uint64_t block_rows, uint64_t block_cols, bool e8m0,
             std::vector<SideRead> side)
      : LayerDecoder(std::move(name), weight, weight.shape[0], weight.shape[1], std::move(side)),
        in_(weight.shape[1]), block_rows_(block_rows), block_cols_(block_cols), e8m0_(e8m0) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    if (e8m0_) {  // compressed-tensors' decompress_mx_scale: 2.0 ** (s - 127), 2^128 overflowing to inf
      const auto* s = reinterpret_cast<const uint8_t*>(side[0].raw());
      scales_.resize(side[0].numel());
      for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = mx::exp2i(s[k] - 127);
      return;
    }
    const auto* s = reinterpret_cast<const float*>(side[0].raw());
    scales_.assign(s, s + side[0].numel());
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* q = reinterpret_cast<const uint8_t*>(packed);
    const std::array<float, 256>& table = e4m3_table();
    const uint64_t scale_cols = (in_ + block_cols_ - 1) / block_cols_;
    for (uint64_t o = row0; o < row1; ++o) {
      const float* srow = scales_.data() + (o / block_rows_) * scale_cols;
      const uint8_t* qrow = q + o * in_;
      for (uint64_t b = 0; b < scale_cols; ++b) {  // one scale per run of block_cols_ values
        const float scale = srow[b];
        for (uint64_t i = b * block_cols_; i < std::min(in_, (b + 1) * block_cols_); ++i) *out++ = table[qrow[i]] * scale;
      }
    }
  }
  uint64_t in_, block_rows_, block_cols_;
  bool e8m0_;
  mutable std::vector<float> scales_;
};

QuantLayer fp8_layer(const RawSource& raw, const std::string& prefix, const std::string& scale_name, const QuantConfig& c) {
  const TensorInfo& weight = layer_tensor(*raw, prefix + ".weight", prefix);
  const TensorInfo& scale = layer_tensor(*raw, scale_name, prefix);
  expect_tensor(weight, {0, 0}, {DType::F8_E4M3}, "an FP8 weight");
  const uint64_t out = weight.shape[0], in = weight.shape[1];
  const uint64_t n = scale.numel();
  uint64_t rows = out, cols = in;  // one scale for the whole tensor
  std::string kind = "tensor";
  // compressed-tensors' mxfp8-quantized: U8 E8M0 exponents, one per group of inputs.
  const bool e8m0 = scale.dtype == DType::U8 && c.method == Method::CompressedTensors && c.group_size > 0;
  if (e8m0 || (c.fp8_block.empty() && c.group_size > 0 && n != 1 && n != out)) {
    rows = 1, cols = static_cast<uint64_t>(c.group_size);
    kind = fmt::format("group{}", cols);
    expect_tensor(scale, {out, (in + cols - 1) / cols}, {e8m0 ? DType::U8 : scale.dtype},
                  fmt::format("for groups of {} inputs of weight {}, the {}scales", cols, shape_to_string(weight.shape), e8m0 ? "E8M0 " : ""));
  } else if (!c.fp8_block.empty() && n != 1) {
    rows = static_cast<uint64_t>(c.fp8_block[0]), cols = static_cast<uint64_t>(c.fp8_block[1]);
    kind = fmt::format("block{}x{}", rows, cols);
    expect_tensor(scale, {(out + rows - 1) / rows, (in + cols - 1) / cols}, {DType::BF16, DType::F16, DType::F32, DType::F8_E8M0},
                  fmt::format("for {} blocks of weight {}, the scales", kind, shape_to_string(weight.shape)));
  } else if (n == out && n != 1) {
    rows = 1, kind = "channel";
    if (!(scale.shape == Shape{out} || scale.shape == Shape{out, 1}))
      expect_tensor(scale, {out, 1}, {DType::BF16, DType::F16, DType::F32, DType::F8_E8M0}, "a per-channel FP8 scale");
  } else if (n != 1) {
    throw Error(ErrorCode::QuantTensorsInconsistent,
                fmt::format("has {} values: neither one per tensor, one per each of the {} output rows, nor one per block "
                            "(the config gives no weight_block_size)",
                            n, out),
                {}, scale.name);
  }
  // A float scale is read as F32 through the library's conversion: safetensors' F8_E8M0 (DeepSeek's
  // ue8m0 weight_scale_inv, torch's float8_e8m0fnu) as 2^(e - 127) exactly, 0xFF as NaN, which is
  // what torch's scale.float() gives the reference dequantisation.
  if (!e8m0 && scale.dtype != DType::BF16 && scale.dtype != DType::F16 && scale.dtype != DType::F32 &&
      scale.dtype != DType::F8_E8M0)
    expect_tensor(scale, scale.shape, {DType::BF16, DType::F16, DType::F32, DType::F8_E8M0}, "an FP8 scale");
  auto decoder = std::make_shared<Fp8Decoder>("FP8-E4M3-" + kind, weight, rows, cols, e8m0,
                                              std::vector<SideRead>{{scale, e8m0 ? DType::U8 : DType::F32}});
  QuantLayer layer{dense_entry(weight.name, weight, weight.shape, decoder), {weight.name, scale.name}};
  if (const TensorInfo* input = raw->find(prefix + ".input_scale")) layer.stored.push_back(input->name);
  return layer;
}

}  // namespace

// An F8_E4M3 weight with its weight_scale_inv (DeepSeek's blocks) or weight_scale (per tensor,
// channel or group: compressed-tensors, FP8 configs).
extern const LayerKind kFp8Kind{
    "FP8 (F8_E4M3 weight with a scale)",
    [](const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string& extra) {
      for (const char* suffix : {".weight_scale_inv", ".weight_scale"}) {
        std::string layer;
        if (!strip_suffix(t.name, suffix, layer)) continue;
        const TensorInfo* w = raw.find(layer + ".weight");
        if (!w || w->dtype != DType::F8_E4M3) return false;
        prefix = layer, extra = t.name;
        return true;
      }
      return false;
    },
    [](const QuantConfig& c) {
      return c.method == Method::Fp8 || c.method == Method::CompressedTensors || (c.method == Method::Modelopt && c.modelopt_algo == "FP8");
    },
    fp8_layer};

}  // namespace wl::quant
