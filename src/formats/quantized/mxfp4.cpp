// gpt-oss's MXFP4 experts (transformers' "mxfp4" quant_method), dense as transformers 5 dequantises
// them (integrations/mxfp4.py, convert_moe_packed_tensors).
// `<prefix>_blocks` U8 [E, R, G, B] (two E2M1 codes a byte, low nibble first) and `<prefix>_scales`
// U8 [E, R, G] (E8M0, one per 2B values) as the F32 `<prefix>` [E, 2·G·B, R] (transposed, as
// transformers hands the experts to the model): W[e, i, r] = e2m1(code) · 2^(s - 127) in F32, with
// i = 2·B·g + 2·byte + nibble, exact as torch.ldexp is (s = 255 is no NaN: ±6 · 2^128 overflows to
// ±inf, 0.5 · 2^128 is 2^127).
#include "formats/quantized/layer_kind.hpp"
#include "formats/mxfp4_stored.hpp"

#include <array>

#include <fmt/format.h>

#include "core/microscaling.hpp"

namespace wl::quant {

namespace {

constexpr std::array<float, 16> kDoubled = [] {  // E2M1 values times 2, -0 kept
  std::array<float, 16> t{};
  for (size_t c = 0; c < t.size(); ++c) t[c] = 2 * mx::kE2m1[c];
  return t;
}();

constexpr const char* kName = "MXFP4";

class Mxfp4Decoder final : public LayerDecoder {
 public:
  Mxfp4Decoder(const TensorInfo& blocks, std::vector<SideRead> side)
      : LayerDecoder(kName, blocks, blocks.shape[0] * blocks.shape[2] * blocks.shape[3] * 2, blocks.shape[1], std::move(side)),
        rows_(blocks.shape[1]), groups_(blocks.shape[2]), bytes_(blocks.shape[3]) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    const auto* s = reinterpret_cast<const uint8_t*>(side[0].raw());
    scales_.resize(side[0].numel());
    // torch.ldexp is exact up to the result's own overflow (0.5 · 2^128 is 2^127): the values
    // doubled times 2^(s - 128), a float for every s.
    for (size_t k = 0; k < scales_.size(); ++k) scales_[k] = mx::exp2i(s[k] - 128);
  }
  // Dense row (e, i) gathers one nibble from each of the R packed rows of expert e.
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const uint64_t per_scale = 2 * bytes_, inputs = groups_ * per_scale, row_bytes = groups_ * bytes_;
    for (uint64_t row = row0; row < row1; ++row) {
      const uint64_t e = row / inputs, i = row % inputs, g = i / per_scale;
      const auto* q = reinterpret_cast<const uint8_t*>(packed) + e * rows_ * row_bytes + g * bytes_ + (i % per_scale) / 2;
      const float* s = scales_.data() + e * rows_ * groups_ + g;
      const int shift = (i & 1) ? 4 : 0;
      for (uint64_t r = 0; r < rows_; ++r) *out++ = kDoubled[(q[r * row_bytes] >> shift) & 0x0F] * s[r * groups_];
    }
  }
  uint64_t rows_, groups_, bytes_;
  mutable std::vector<float> scales_;
};

QuantLayer mxfp4_layer(const RawSource& raw, const std::string& prefix) {
  const TensorInfo& blocks = layer_tensor(*raw, prefix + "_blocks", prefix);
  const TensorInfo& scales = layer_tensor(*raw, prefix + "_scales", prefix);
  expect_tensor(blocks, {0, 0, 0, 0}, {DType::U8}, "MXFP4 experts' blocks");
  const uint64_t experts = blocks.shape[0], rows = blocks.shape[1], groups = blocks.shape[2], bytes = blocks.shape[3];
  if (experts * rows * groups * bytes == 0) inconsistent(blocks, fmt::format("is {}: MXFP4 blocks without values", shape_to_string(blocks.shape)));
  expect_tensor(scales, {experts, rows, groups}, {DType::U8},
                fmt::format("for blocks {} (one E8M0 scale per block of {} values) the scales", shape_to_string(blocks.shape), 2 * bytes));
  auto decoder = std::make_shared<Mxfp4Decoder>(blocks, std::vector<SideRead>{{scales, DType::U8}});
  return {dense_entry(prefix, blocks, {experts, groups * bytes * 2, rows}, decoder), {blocks.name, scales.name}};
}

}  // namespace

std::optional<Mxfp4Stored> mxfp4_stored(const TensorInfo& dense) {
  // The view's dense entry (mxfp4_layer): the blocks' bytes, the decoder's one side read the scales.
  if (!dense.decoder || dense.decoder->name() != kName || dense.decoder->side_reads().size() != 1 || dense.shape.size() != 3)
    return std::nullopt;
  const TensorInfo& scales = dense.decoder->side_reads()[0].tensor;
  if (scales.dtype != DType::U8 || scales.shape.size() != 3) return std::nullopt;
  const uint64_t experts = scales.shape[0], rows = scales.shape[1], groups = scales.shape[2];
  if (dense.shape != Shape{experts, groups * 32, rows} || dense.nbytes != experts * rows * groups * 16) return std::nullopt;
  Mxfp4Stored m{dense, scales};
  m.blocks.name = dense.name + "_blocks";
  m.blocks.dtype = DType::U8;
  m.blocks.shape = {experts, rows, groups, 16};
  m.blocks.decoder = nullptr;
  return m;
}

// gpt-oss's experts: <prefix>_blocks beside <prefix>_scales.
extern const LayerKind kMxfp4Kind{
    "MXFP4 (_blocks with _scales)",
    [](const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string&) {
      std::string layer;
      if (!strip_suffix(t.name, "_blocks", layer) || !raw.find(layer + "_scales")) return false;
      prefix = layer;
      return true;
    },
    [](const QuantConfig& c) { return c.method == Method::Mxfp4; },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig&) { return mxfp4_layer(raw, prefix); }};

}  // namespace wl::quant
