// compressed-tensors' integer formats: pack-quantized (its PackedQuantizationCompressor, what vLLM's
// w4a16 and w8a16 models carry: 1 to 8 bits packed densely into int32 words) and naive-quantized /
// int-quantized (its NaiveQuantizationCompressor: one int8 per value, vLLM's w8a8 int8 models).
// Both dequantise by GroupScales' rule.
// weight_packed I32 [out, ceil(in * bits / 32)]: each row one little-endian bit stream, element i at
// bit i * bits (values may straddle two words), stored as q + 2^(bits-1); weight_shape I64 [2] =
// (out, in); weight_scale, and asymmetric weight_zero_point I32 [ceil(out * bits / 32), groups]
// packed the same way down each column; actorder "group": weight_g_idx I32 [in].
// weight I8 [out, in] holding q itself; weight_scale; asymmetric weight_zero_point [out, groups];
// actorder: weight_g_idx [in].
#include "formats/quantized/layer_kind.hpp"

#include <fmt/format.h>

#include "formats/quantized/group_scales.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

uint64_t words_for(uint64_t values, int bits) { return (values * static_cast<uint64_t>(bits) + 31) / 32; }

// `bits` > 0: rows of packed words; 0: rows of int8.
class IntDecoder final : public LayerDecoder {
 public:
  IntDecoder(std::string name, const TensorInfo& stored, uint64_t out, uint64_t in, int bits, GroupScales scales)
      : LayerDecoder(std::move(name), stored, out, in, scales.side()), in_(in), bits_(bits), scales_(std::move(scales)) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override { scales_.unpack(side, 0); }

  void decode_rows(const std::byte* stored, uint64_t row0, uint64_t row1, float* out) const override {
    for (uint64_t o = row0; o < row1; ++o, out += in_) {
      if (bits_ == 0) {
        convert(DType::I8, stored + o * in_, DType::F32, out, in_);
      } else {
        const uint32_t* row = reinterpret_cast<const uint32_t*>(stored) + o * words_for(in_, bits_);
        const int offset = 1 << (bits_ - 1);
        for (uint64_t i = 0; i < in_; ++i) out[i] = static_cast<float>(static_cast<int>(stream_value(row, 1, i, bits_)) - offset);
      }
      scales_.dequantize_row(o, out, out);
    }
  }

  uint64_t in_;
  int bits_;
  mutable GroupScales scales_;
};

QuantLayer int_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c, const TensorInfo& stored, uint64_t out,
                     uint64_t in, int packed_bits, std::vector<std::string> also_stored) {
  GroupScales scales(*raw, prefix, stored, out, in, c, packed_bits);
  std::vector<std::string> names{stored.name};
  for (std::string& n : also_stored) names.push_back(std::move(n));
  for (std::string& n : scales.stored()) names.push_back(std::move(n));
  auto decoder = std::make_shared<IntDecoder>(fmt::format("CT-I{}-{}", c.bits, c.ct_strategy), stored, out, in, packed_bits,
                                              std::move(scales));
  QuantLayer layer{dense_entry(prefix + ".weight", stored, {out, in}, decoder), std::move(names)};
  if (const TensorInfo* input = raw->find(prefix + ".input_scale")) layer.stored.push_back(input->name);
  return layer;
}

QuantLayer pack_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& packed = layer_tensor(*raw, prefix + ".weight_packed", prefix);
  const TensorInfo& shape = layer_tensor(*raw, prefix + ".weight_shape", prefix);
  if (c.bits < 1 || c.bits > 8)
    throw Error(ErrorCode::QuantConfigInvalid, fmt::format("{}: pack-quantized weights of {} bits (1 to 8 pack)", c.origin, c.bits),
                {}, packed.name);
  expect_tensor(packed, {0, 0}, {DType::I32, DType::U32}, "a pack-quantized weight_packed");
  expect_tensor(shape, {2}, {DType::I64, DType::I32}, "weight_shape, the dense (out, in),");
  const TensorView dims = raw->load(shape, DType::I64);
  const auto* d = reinterpret_cast<const int64_t*>(dims.raw());
  if (d[0] <= 0 || d[1] <= 0) inconsistent(shape, fmt::format("({}, {}) is not a matrix's shape", d[0], d[1]));
  const uint64_t out = static_cast<uint64_t>(d[0]), in = static_cast<uint64_t>(d[1]);
  if (packed.shape[0] != out || packed.shape[1] != words_for(in, c.bits))
    inconsistent(packed, fmt::format("is {}, but {} rows of {} {}-bit values pack into [{}, {}]", shape_to_string(packed.shape), out, in,
                                     c.bits, out, words_for(in, c.bits)));
  return int_layer(raw, prefix, c, packed, out, in, c.bits, {shape.name});
}

QuantLayer naive_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& weight = layer_tensor(*raw, prefix + ".weight", prefix);
  expect_tensor(weight, {0, 0}, {DType::I8}, fmt::format("a {} weight", c.ct_format));
  if (c.bits < 1 || c.bits > 8)
    throw Error(ErrorCode::QuantConfigInvalid, fmt::format("{}: int8-stored weights of {} bits (1 to 8 fit)", c.origin, c.bits),
                {}, weight.name);
  return int_layer(raw, prefix, c, weight, weight.shape[0], weight.shape[1], 0, {});
}

}  // namespace

// Integers packed into int32 words (weight_packed with weight_shape), any format but FP4's.
extern const LayerKind kPackQuantizedKind{
    "compressed-tensors pack-quantized (weight_packed)",
    [](const WeightSource&, const TensorInfo& t, std::string& prefix, std::string&) { return strip_suffix(t.name, ".weight_packed", prefix); },
    [](const QuantConfig& c) { return c.method == Method::CompressedTensors && !c.ct_format.ends_with("fp4-pack-quantized"); },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) { return pack_quantized_layer(raw, prefix, c); }};

// One int8 per value (naive-quantized, int-quantized): an I8 weight with its weight_scale.
extern const LayerKind kInt8ValuesKind{
    "compressed-tensors naive/int-quantized (I8 weight with weight_scale)",
    [](const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string&) {
      std::string layer;
      if (!strip_suffix(t.name, ".weight_scale", layer)) return false;
      const TensorInfo* w = raw.find(layer + ".weight");
      if (!w || w->dtype != DType::I8) return false;
      prefix = layer;
      return true;
    },
    [](const QuantConfig& c) { return c.method == Method::CompressedTensors; },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) { return naive_quantized_layer(raw, prefix, c); }};

}  // namespace wl::quant
