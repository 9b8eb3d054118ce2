#include "formats/quantized/pack_quantized.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

uint64_t words_for(uint64_t values, int bits) { return (values * static_cast<uint64_t>(bits) + 31) / 32; }

// Element `i` of a bit stream of `bits`-wide values, the stream's words `stride` apart.
uint32_t stream_value(const uint32_t* words, uint64_t stride, uint64_t i, int bits) {
  const uint64_t bit = i * static_cast<uint64_t>(bits), w = bit / 32, shift = bit % 32;
  uint64_t v = words[w * stride] >> shift;
  if (shift + static_cast<uint64_t>(bits) > 32) v |= static_cast<uint64_t>(words[(w + 1) * stride]) << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}

class PackQuantizedDecoder final : public LayerDecoder {
 public:
  PackQuantizedDecoder(const QuantConfig& c, const TensorInfo& packed, uint64_t out, uint64_t in, uint64_t groups,
                       uint64_t group_size, RawSource raw, std::vector<SideTensor> side, bool zero_points, const TensorInfo* g_idx)
      : LayerDecoder(fmt::format("CT-I{}-{}", c.bits, c.ct_strategy), packed, out, in, std::move(raw), std::move(side)),
        out_(out), in_(in), groups_(groups), group_size_(group_size), bits_(c.bits), has_zeros_(zero_points), g_idx_(g_idx) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    const auto* s = reinterpret_cast<const float*>(side[0].raw());
    scales_.assign(s, s + side[0].numel());
    if (scales_.size() == 1) scales_.assign(out_ * groups_, scales_[0]);  // one scale for the tensor
    const int offset = 1 << (bits_ - 1);
    zeros_.assign(out_ * groups_, 0.0f);
    if (has_zeros_) {
      const auto* z = reinterpret_cast<const uint32_t*>(side[1].raw());
      for (uint64_t g = 0; g < groups_; ++g)
        for (uint64_t o = 0; o < out_; ++o)
          zeros_[o * groups_ + g] = static_cast<float>(static_cast<int>(stream_value(z + g, groups_, o, bits_)) - offset);
    }
    group_.resize(in_);
    if (!g_idx_) {
      for (uint64_t i = 0; i < in_; ++i) group_[i] = static_cast<uint32_t>(i / group_size_);
      return;
    }
    const TensorView& gv = side.back();
    const auto* g = reinterpret_cast<const int32_t*>(gv.raw());
    std::vector<uint64_t> order(in_);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return g[a] < g[b]; });
    for (uint64_t j = 0; j < in_; ++j) {
      if (g[order[j]] < 0 || static_cast<uint64_t>(g[order[j]]) >= groups_)
        inconsistent(*g_idx_, fmt::format("g_idx[{}] = {} names a group outside the {} of the scales", order[j], g[order[j]], groups_));
      group_[order[j]] = static_cast<uint32_t>(j / group_size_);
    }
  }

  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* words = reinterpret_cast<const uint32_t*>(packed);
    const uint64_t row_words = words_for(in_, bits_);
    const int offset = 1 << (bits_ - 1);
    for (uint64_t o = row0; o < row1; ++o, out += in_) {
      const uint32_t* row = words + o * row_words;
      const float* s = scales_.data() + o * groups_;
      const float* z = zeros_.data() + o * groups_;
      for (uint64_t i = 0; i < in_; ++i) {
        const uint32_t g = group_[i];
        out[i] = (static_cast<float>(static_cast<int>(stream_value(row, 1, i, bits_)) - offset) - z[g]) * s[g];
      }
    }
  }

  uint64_t out_, in_, groups_, group_size_;
  int bits_;
  bool has_zeros_;
  const TensorInfo* g_idx_;  // the source's entry (its source outlives the decoder); null: column order
  mutable std::vector<float> scales_, zeros_;  // [out, groups]
  mutable std::vector<uint32_t> group_;        // [in]
};

}  // namespace

QuantLayer pack_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& packed = layer_tensor(*raw, prefix + ".weight_packed", prefix);
  const TensorInfo& scale = layer_tensor(*raw, prefix + ".weight_scale", prefix);
  const TensorInfo& shape = layer_tensor(*raw, prefix + ".weight_shape", prefix);
  const TensorInfo* zero_point = raw->find(prefix + ".weight_zero_point");
  const TensorInfo* g_idx = raw->find(prefix + ".weight_g_idx");
  if (c.bits < 1 || c.bits > 8)
    throw Error(ErrorCode::QuantConfigInvalid, fmt::format("{}: pack-quantized weights of {} bits (1 to 8 pack)", c.origin, c.bits),
                packed.file, packed.name);
  expect_tensor(packed, {0, 0}, {DType::I32, DType::U32}, "a pack-quantized weight_packed");
  expect_tensor(shape, {2}, {DType::I64, DType::I32}, "weight_shape, the dense (out, in),");
  const TensorView dims = raw->load(shape, DType::I64);
  const auto* d = reinterpret_cast<const int64_t*>(dims.raw());
  if (d[0] <= 0 || d[1] <= 0) inconsistent(shape, fmt::format("({}, {}) is not a matrix's shape", d[0], d[1]));
  const uint64_t out = static_cast<uint64_t>(d[0]), in = static_cast<uint64_t>(d[1]);
  if (packed.shape[0] != out || packed.shape[1] != words_for(in, c.bits))
    inconsistent(packed, fmt::format("is {}, but {} rows of {} {}-bit values pack into [{}, {}]", shape_to_string(packed.shape), out, in,
                                     c.bits, out, words_for(in, c.bits)));
  // The scales' columns are the groups (one for channel and tensor scales).
  const uint64_t groups = scale.shape.size() == 2 ? scale.shape[1] : 1;
  if (!(scale.numel() == 1 || (scale.shape.size() == 2 && scale.shape[0] == out && groups > 0)))
    expect_tensor(scale, {out, 0}, {DType::BF16, DType::F16, DType::F32}, fmt::format("for {} output rows the scales", out));
  expect_tensor(scale, scale.shape, {DType::BF16, DType::F16, DType::F32}, "a pack-quantized weight_scale");
  const uint64_t group_size = groups == 1 ? in : static_cast<uint64_t>(std::max<int64_t>(c.group_size, 0));
  if (groups > 1 && (group_size == 0 || group_size * groups != in))
    inconsistent(scale, fmt::format("{} groups of group_size {} do not cover the {} input features", groups, c.group_size, in));
  std::vector<SideTensor> side{{&scale, DType::F32}};
  if (zero_point) {
    expect_tensor(*zero_point, {words_for(out, c.bits), groups}, {DType::I32, DType::U32},
                  fmt::format("for {} rows and {} groups of {}-bit values packed down each column, weight_zero_point", out, groups, c.bits));
    side.push_back({zero_point, zero_point->dtype});
  } else if (!c.sym) {
    inconsistent(packed, fmt::format("{} says asymmetric, but the layer has no weight_zero_point", c.origin));
  }
  if (g_idx) {
    expect_tensor(*g_idx, {in}, {DType::I32, DType::I64}, fmt::format("for {} input features weight_g_idx", in));
    side.push_back({g_idx, DType::I32});
  }
  auto decoder = std::make_shared<PackQuantizedDecoder>(c, packed, out, in, groups, group_size, raw, std::move(side),
                                                        zero_point != nullptr, g_idx);
  QuantLayer layer{dense_entry(prefix + ".weight", packed, {out, in}, decoder), {packed.name, scale.name, shape.name}};
  if (zero_point) layer.stored.push_back(zero_point->name);
  if (g_idx) layer.stored.push_back(g_idx->name);
  return layer;
}

}  // namespace wl::quant
