// GPTQ and AWQ: integers packed into int32 words with per-group scales and zero points.
// GPTQ (AutoGPTQ / GPTQModel layout): qweight I32 [in / (32 / bits), out], 32 / bits consecutive
// input rows per word, LSB first; qzeros I32 [groups, out / (32 / bits)] packed the same way along
// the outputs (v1: zero − 1, +1 on read, as AutoGPTQ's dequantisation does); scales F16 [groups, out];
// g_idx I32 [in] (absent: input i is in group i / group_size).
// W[o, i] = (q[i, o] − z[g, o]) · s[g, o] with g = g_idx[i], in F32.
// AWQ GEMM (AutoAWQ): qweight I32 [in, out / 8], 8 output columns per word in the order
// [0, 2, 4, 6, 1, 3, 5, 7] (column 8w + j in nibble [0, 4, 1, 5, 2, 6, 3, 7][j]); qzeros I32
// [groups, out / 8] packed the same way (no +1); scales F16 [groups, out]; g = i / group_size.
#include "formats/quantized/layer_kind.hpp"

#include <cstring>

#include <fmt/format.h>

#include "formats/quantized/packed_int_hwy.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

// The group of each input feature, from g_idx or from group_size; checked against `groups`.
std::vector<uint32_t> groups_of_inputs(const TensorView* g_idx, const TensorInfo* g_info, uint64_t in, int64_t group_size,
                                       uint64_t groups) {
  std::vector<uint32_t> g(in);
  for (uint64_t i = 0; i < in; ++i) {
    const int64_t v = g_idx ? reinterpret_cast<const int32_t*>(g_idx->raw())[i]
                            : (group_size < 0 ? 0 : static_cast<int64_t>(i) / group_size);
    if (v < 0 || static_cast<uint64_t>(v) >= groups)
      inconsistent(*g_info, fmt::format("g_idx[{}] = {} names a group outside the {} of the scales", i, v, groups));
    g[i] = static_cast<uint32_t>(v);
  }
  return g;
}

// Shared by both: per-(group, output) zero points and scales as F32, unpacked once.
class PackedIntDecoder : public LayerDecoder {
 public:
  PackedIntDecoder(std::string name, const TensorInfo& packed, uint64_t out, uint64_t in, uint64_t groups, int bits,
                   std::vector<SideRead> side)
      : LayerDecoder(std::move(name), packed, out, in, std::move(side)), out_(out), in_(in), groups_(groups),
        bits_(bits) {}

 protected:
  uint32_t unpack_zero(const uint32_t* qzeros, uint64_t g, uint64_t o, const int* order) const {
    const uint64_t per_word = 32 / static_cast<uint64_t>(bits_), words = out_ / per_word;
    const uint32_t word = qzeros[g * words + o / per_word];
    const uint64_t slot = order ? static_cast<uint64_t>(order[o % per_word]) : o % per_word;
    return (word >> (static_cast<uint32_t>(bits_) * slot)) & ((1u << bits_) - 1);
  }
  void unpack_scales_zeros(const TensorView& qzeros, const TensorView& scales, const int* order, uint32_t zero_add) const {
    zeros_.resize(groups_ * out_);
    scales_.resize(groups_ * out_);
    std::memcpy(scales_.data(), scales.raw(), scales_.size() * sizeof(float));
    const auto* z = reinterpret_cast<const uint32_t*>(qzeros.raw());
    for (uint64_t g = 0; g < groups_; ++g)
      for (uint64_t o = 0; o < out_; ++o) zeros_[g * out_ + o] = static_cast<float>(unpack_zero(z, g, o, order) + zero_add);
  }

  uint64_t out_, in_, groups_;
  int bits_;
  mutable std::vector<float> zeros_, scales_;  // [groups, out]
  mutable std::vector<uint32_t> group_;       // [in]
};

class GptqDecoder final : public PackedIntDecoder {
 public:
  GptqDecoder(const QuantConfig& c, const TensorInfo& packed, uint64_t out, uint64_t in, uint64_t groups,
              std::vector<SideRead> side, bool g_idx)
      : PackedIntDecoder(fmt::format("GPTQ-I{}-g{}", c.bits, c.group_size), packed, out, in, groups, c.bits, std::move(side)),
        zero_add_(c.zeros_minus_one ? 1 : 0), group_size_(c.group_size), g_idx_(g_idx) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    unpack_scales_zeros(side[0], side[1], nullptr, zero_add_);
    group_ = groups_of_inputs(g_idx_ ? &side[2] : nullptr, g_idx_ ? &side_reads()[2].tensor : nullptr, in_, group_size_, groups_);
    uniform_ = words_share_groups(group_.data(), in_, bits_);
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    decode_gptq(reinterpret_cast<const uint32_t*>(packed),
                PackedGrid{out_, in_, bits_, group_.data(), zeros_.data(), scales_.data(), uniform_}, row0, row1, out);
  }
  uint32_t zero_add_;
  int64_t group_size_;
  bool g_idx_;  // act-order groups: side[2]
  mutable bool uniform_ = false;
};

constexpr int kAwqSlot[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // nibble of column 8w + j

class AwqDecoder final : public PackedIntDecoder {
 public:
  AwqDecoder(const QuantConfig& c, const TensorInfo& packed, uint64_t out, uint64_t in, uint64_t groups,
             std::vector<SideRead> side)
      : PackedIntDecoder(fmt::format("AWQ-I4-g{}", c.group_size), packed, out, in, groups, 4, std::move(side)),
        group_size_(c.group_size) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    unpack_scales_zeros(side[0], side[1], kAwqSlot, 0);
    group_ = groups_of_inputs(nullptr, nullptr, in_, group_size_, groups_);
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    decode_awq(reinterpret_cast<const uint32_t*>(packed), PackedGrid{out_, in_, 4, group_.data(), zeros_.data(), scales_.data()},
               kAwqSlot, row0, row1, out);
  }
  int64_t group_size_;
};

uint64_t groups_for(const QuantConfig& c, uint64_t in, const TensorInfo& scales) {
  if (c.group_size < 0) return 1;
  if (in % static_cast<uint64_t>(c.group_size) != 0)
    inconsistent(scales, fmt::format("group_size {} does not divide the {} input features", c.group_size, in));
  return in / static_cast<uint64_t>(c.group_size);
}

QuantLayer gptq_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& qweight = layer_tensor(*raw, prefix + ".qweight", prefix);
  const TensorInfo& qzeros = layer_tensor(*raw, prefix + ".qzeros", prefix);
  const TensorInfo& scales = layer_tensor(*raw, prefix + ".scales", prefix);
  const TensorInfo* g_idx = raw->find(prefix + ".g_idx");
  if (c.bits == 3)
    throw Error(ErrorCode::QuantUnsupported, "3-bit GPTQ (values straddle int32 words) is not decoded", {}, qweight.name);
  const uint64_t per_word = 32 / static_cast<uint64_t>(c.bits);
  expect_tensor(qweight, {0, 0}, {DType::I32, DType::U32}, "a GPTQ qweight");
  const uint64_t in = qweight.shape[0] * per_word, out = qweight.shape[1];
  // In act-order checkpoints the groups follow g_idx; their count is the scales' rows.
  const uint64_t groups = c.desc_act && g_idx ? scales.shape.empty() ? 0 : scales.shape[0] : groups_for(c, in, scales);
  expect_tensor(scales, {groups, out}, {DType::F16, DType::BF16, DType::F32},
                fmt::format("with qweight {} ({}-bit: in {}, out {}) the scales", shape_to_string(qweight.shape), c.bits, in, out));
  if (out % per_word != 0) inconsistent(qweight, fmt::format("{} outputs do not pack into {}-bit qzeros words", out, c.bits));
  expect_tensor(qzeros, {groups, out / per_word}, {DType::I32, DType::U32}, fmt::format("for {} groups of {} outputs qzeros", groups, out));
  std::vector<SideRead> side = {{qzeros, qzeros.dtype}, {scales, DType::F32}};
  if (g_idx) {
    expect_tensor(*g_idx, {in}, {DType::I32, DType::I64}, fmt::format("for {} input features g_idx", in));
    side.push_back({*g_idx, DType::I32});
  }
  auto decoder = std::make_shared<GptqDecoder>(c, qweight, out, in, groups, std::move(side), g_idx != nullptr);
  QuantLayer layer{dense_entry(prefix + ".weight", qweight, {out, in}, decoder), {qweight.name, qzeros.name, scales.name}};
  if (g_idx) layer.stored.push_back(g_idx->name);
  return layer;
}

QuantLayer awq_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& c) {
  const TensorInfo& qweight = layer_tensor(*raw, prefix + ".qweight", prefix);
  const TensorInfo& qzeros = layer_tensor(*raw, prefix + ".qzeros", prefix);
  const TensorInfo& scales = layer_tensor(*raw, prefix + ".scales", prefix);
  if (c.awq_version != "gemm")
    throw Error(ErrorCode::QuantUnsupported, fmt::format("AWQ version '{}' packing (GEMM is decoded)", c.awq_version),
                {}, qweight.name);
  expect_tensor(qweight, {0, 0}, {DType::I32, DType::U32}, "an AWQ qweight");
  const uint64_t in = qweight.shape[0], out = qweight.shape[1] * 8;
  const uint64_t groups = groups_for(c, in, scales);
  expect_tensor(scales, {groups, out}, {DType::F16, DType::BF16, DType::F32},
                fmt::format("with qweight {} (in {}, out {}) the scales", shape_to_string(qweight.shape), in, out));
  expect_tensor(qzeros, {groups, out / 8}, {DType::I32, DType::U32}, fmt::format("for {} groups of {} outputs qzeros", groups, out));
  auto decoder = std::make_shared<AwqDecoder>(c, qweight, out, in, groups,
                                              std::vector<SideRead>{{qzeros, qzeros.dtype}, {scales, DType::F32}});
  return {dense_entry(prefix + ".weight", qweight, {out, in}, decoder), {qweight.name, qzeros.name, scales.name}};
}

}  // namespace

extern const LayerKind kPackedIntKind{
    "GPTQ/AWQ (qweight)",
    [](const WeightSource&, const TensorInfo& t, std::string& prefix, std::string&) { return strip_suffix(t.name, ".qweight", prefix); },
    [](const QuantConfig& c) { return c.method == Method::Gptq || c.method == Method::Awq; },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) {
      return c.method == Method::Gptq ? gptq_layer(raw, prefix, c) : awq_layer(raw, prefix, c);
    }};

}  // namespace wl::quant
