#include "formats/quantized/group_scales.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace wl::quant {

uint32_t stream_value(const uint32_t* words, uint64_t stride, uint64_t i, int bits) {
  const uint64_t bit = i * static_cast<uint64_t>(bits), w = bit / 32, shift = bit % 32;
  uint64_t v = words[w * stride] >> shift;
  if (shift + static_cast<uint64_t>(bits) > 32) v |= static_cast<uint64_t>(words[(w + 1) * stride]) << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}

GroupScales::GroupScales(const WeightSource& raw, const std::string& prefix, const TensorInfo& values, uint64_t out, uint64_t in,
                         const QuantConfig& c, int packed_zero_bits)
    : out_(out), in_(in), zero_bits_(packed_zero_bits) {
  const TensorInfo& scale = layer_tensor(raw, prefix + ".weight_scale", prefix);
  const TensorInfo* zero_point = raw.find(prefix + ".weight_zero_point");
  const TensorInfo* g_idx = raw.find(prefix + ".weight_g_idx");
  has_g_idx_ = g_idx != nullptr;
  // The scales' columns are the groups (one for channel and tensor scales).
  groups_ = scale.shape.size() == 2 ? scale.shape[1] : 1;
  if (!(scale.numel() == 1 || (scale.shape.size() == 2 && scale.shape[0] == out && groups_ > 0)))
    expect_tensor(scale, {out, 0}, {DType::BF16, DType::F16, DType::F32}, fmt::format("for {} output rows the scales", out));
  expect_tensor(scale, scale.shape, {DType::BF16, DType::F16, DType::F32}, "a compressed-tensors weight_scale");
  group_size_ = groups_ == 1 ? in : static_cast<uint64_t>(std::max<int64_t>(c.group_size, 0));
  if (groups_ > 1 && (group_size_ == 0 || group_size_ * groups_ != in))
    inconsistent(scale, fmt::format("{} groups of group_size {} do not cover the {} input features", groups_, c.group_size, in));
  side_.push_back({scale, DType::F32});
  has_zeros_ = zero_point != nullptr;
  if (zero_point && zero_bits_ > 0) {
    const uint64_t words = (out * static_cast<uint64_t>(zero_bits_) + 31) / 32;
    expect_tensor(*zero_point, {words, groups_}, {DType::I32, DType::U32},
                  fmt::format("for {} rows and {} groups of {}-bit values packed down each column, weight_zero_point", out, groups_,
                              zero_bits_));
    side_.push_back({*zero_point, zero_point->dtype});
  } else if (zero_point) {
    expect_tensor(*zero_point, {out, groups_}, {DType::I8, DType::I32, DType::BF16, DType::F16, DType::F32},
                  fmt::format("for {} rows and {} groups, weight_zero_point", out, groups_));
    side_.push_back({*zero_point, DType::F32});
  } else if (!c.sym) {
    inconsistent(values, fmt::format("{} says asymmetric, but the layer has no weight_zero_point", c.origin));
  }
  if (g_idx) {
    expect_tensor(*g_idx, {in}, {DType::I32, DType::I64}, fmt::format("for {} input features weight_g_idx", in));
    side_.push_back({*g_idx, DType::I32});
  }
}

std::vector<std::string> GroupScales::stored() const {
  std::vector<std::string> names;
  for (const SideRead& s : side_) names.push_back(s.tensor.name);
  return names;
}

void GroupScales::unpack(const std::vector<TensorView>& side, size_t first) {
  const auto* s = reinterpret_cast<const float*>(side[first].raw());
  scales_.assign(s, s + side[first].numel());
  if (scales_.size() == 1) scales_.assign(out_ * groups_, scales_[0]);  // one scale for the tensor
  zeros_.assign(out_ * groups_, 0.0f);
  if (has_zeros_ && zero_bits_ > 0) {
    const auto* z = reinterpret_cast<const uint32_t*>(side[first + 1].raw());
    const int offset = 1 << (zero_bits_ - 1);
    for (uint64_t g = 0; g < groups_; ++g)
      for (uint64_t o = 0; o < out_; ++o)
        zeros_[o * groups_ + g] = static_cast<float>(static_cast<int>(stream_value(z + g, groups_, o, zero_bits_)) - offset);
  } else if (has_zeros_) {
    const auto* z = reinterpret_cast<const float*>(side[first + 1].raw());
    zeros_.assign(z, z + out_ * groups_);
  }
  group_.resize(in_);
  if (!has_g_idx_) {
    for (uint64_t i = 0; i < in_; ++i) group_[i] = static_cast<uint32_t>(i / group_size_);
    return;
  }
  const auto* g = reinterpret_cast<const int32_t*>(side[first + (has_zeros_ ? 2 : 1)].raw());
  std::vector<uint64_t> order(in_);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return g[a] < g[b]; });
  for (uint64_t j = 0; j < in_; ++j) {
    if (g[order[j]] < 0 || static_cast<uint64_t>(g[order[j]]) >= groups_)
      inconsistent(side_.back().tensor, fmt::format("g_idx[{}] = {} names a group outside the {} of the scales", order[j], g[order[j]], groups_));
    group_[order[j]] = static_cast<uint32_t>(j / group_size_);
  }
}

void GroupScales::dequantize_row(uint64_t o, const float* q, float* out) const {
  const float* s = scales_.data() + o * groups_;
  const float* z = zeros_.data() + o * groups_;
  for (uint64_t i = 0; i < in_; ++i) {
    const uint32_t g = group_[i];
    out[i] = (q[i] - z[g]) * s[g];
  }
}

}  // namespace wl::quant
