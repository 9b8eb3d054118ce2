// compressed-tensors' sparse formats: a pruned weight's kept values and a bitmask of where they go.
// Under `base` — `<prefix>.weight` (compressed-tensors before its #219, January 2025) or `<prefix>`
// (since): .compressed, the kept values in row-major order; .bitmask U8 [rows, ceil(cols / 8)]: bit
// c % 8 (least significant first) of byte c / 8 set where element c of the row is kept
// (numpy.packbits, bitorder little); .shape: the dense (rows, cols). Zeros elsewhere, as
// compressed-tensors' bitmask_decompress and sparse24_bitmask_decompress fill them.
//   sparse-bitmask: .compressed is 1-D, .row_offsets I64 [rows] where each row's values start.
//   sparse-24-bitmask: .compressed is [rows, cols / 2], exactly two of every four values kept.
// Values of a quantized model (F8_E4M3 or I8, sparsity applied over quantization) are dequantized
// afterwards by `<prefix>.weight_scale` (and zero points, g_idx) as GroupScales says.
#include "formats/quantized/layer_kind.hpp"
#include "weightloader/error.hpp"

#include <bit>
#include <optional>

#include <fmt/format.h>

#include "formats/quantized/group_scales.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::quant {

namespace {

class SparseDecoder final : public LayerDecoder {
 public:
  SparseDecoder(std::string name, const TensorInfo& values, uint64_t rows, uint64_t cols, std::vector<SideRead> side, bool two_four, std::optional<GroupScales> scales)
      : LayerDecoder(std::move(name), values, rows, cols, std::move(side)), rows_(rows), cols_(cols),
        total_(values.numel()), dtype_(values.dtype), two_four_(two_four), scales_(std::move(scales)) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    const auto* bits = reinterpret_cast<const uint8_t*>(side[0].raw());
    mask_.assign(bits, bits + side[0].numel());
    offsets_.resize(rows_);
    if (two_four_) {
      for (uint64_t r = 0; r < rows_; ++r) offsets_[r] = static_cast<int64_t>(r * cols_ / 2);
    } else {
      const auto* offsets = reinterpret_cast<const int64_t*>(side[1].raw());
      offsets_.assign(offsets, offsets + rows_);
    }
    check_mask();
    if (scales_) scales_->unpack(side, two_four_ ? 1 : 2);
  }

  const TensorInfo& bitmask() const { return side_reads()[0].tensor; }

  // Each row's values must start where its offset says and the bitmask must count them all; in
  // 2:4, two of every four.
  void check_mask() const {
    const uint64_t row_bytes = (cols_ + 7) / 8;
    uint64_t at = 0;
    for (uint64_t r = 0; r < rows_; ++r) {
      if (offsets_[r] < 0 || uint64_t(offsets_[r]) != at)
        inconsistent(bitmask(), fmt::format("row {}'s values start at {} by {} but at {} by the bitmask", r, offsets_[r],
                                            two_four_ ? "the 2:4 layout" : "row_offsets", at));
      const uint8_t* row = mask_.data() + r * row_bytes;
      for (uint64_t b = 0; b < row_bytes; ++b) {
        uint8_t byte = row[b];
        if (b + 1 == row_bytes && cols_ % 8) byte &= uint8_t((1u << (cols_ % 8)) - 1);  // bits past the row's end
        at += uint64_t(std::popcount(byte));
        for (int half = 0; two_four_ && half < 2 && b * 8 + half * 4 < cols_; ++half)
          if (std::popcount(uint8_t((byte >> (4 * half)) & 15)) != 2)
            inconsistent(bitmask(), fmt::format("keeps {} of the four values at row {}, columns {}..{}: 2:4 keeps two",
                                                std::popcount(uint8_t((byte >> (4 * half)) & 15)), r, b * 8 + half * 4, b * 8 + half * 4 + 3));
      }
    }
    if (at != total_) inconsistent(bitmask(), fmt::format("marks {} kept values, but the compressed tensor holds {}", at, total_));
  }

  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const uint64_t row_bytes = (cols_ + 7) / 8, size = dtype_size(dtype_);
    thread_local std::vector<float> values;
    for (uint64_t r = row0; r < row1; ++r, out += cols_) {
      const uint64_t begin = uint64_t(offsets_[r]), end = r + 1 < rows_ ? uint64_t(offsets_[r + 1]) : total_;
      values.resize(end - begin);
      convert(dtype_, packed + begin * size, DType::F32, values.data(), values.size());
      const uint8_t* bits = mask_.data() + r * row_bytes;
      for (uint64_t c = 0, v = 0; c < cols_; ++c) out[c] = (bits[c / 8] >> (c % 8)) & 1 ? values[v++] : 0.0f;
      if (scales_) scales_->dequantize_row(r, out, out);
    }
  }

  uint64_t rows_, cols_, total_;
  DType dtype_;
  bool two_four_;
  mutable std::optional<GroupScales> scales_;
  mutable std::vector<uint8_t> mask_;
  mutable std::vector<int64_t> offsets_;
};

QuantLayer sparse_layer(const RawSource& raw, const std::string& prefix, const std::string& base, const QuantConfig& c) {
  const bool two_four = c.ct_sparsity == "sparse-24-bitmask";
  const TensorInfo& values = layer_tensor(*raw, base + ".compressed", prefix);
  const TensorInfo& bitmask = layer_tensor(*raw, base + ".bitmask", prefix);
  const TensorInfo& shape = layer_tensor(*raw, base + ".shape", prefix);
  if (shape.numel() != 2 || shape.decoder || (shape.dtype != DType::I64 && shape.dtype != DType::I32))
    expect_tensor(shape, {2}, {DType::I64, DType::I32}, "shape, the dense (rows, cols),");
  const TensorView dims = raw->load(shape, DType::I64);
  const auto* d = reinterpret_cast<const int64_t*>(dims.raw());
  if (d[0] <= 0 || d[1] <= 0) inconsistent(shape, fmt::format("({}, {}) is not a matrix's shape", d[0], d[1]));
  const uint64_t rows = uint64_t(d[0]), cols = uint64_t(d[1]);
  std::vector<SideRead> side{{bitmask, bitmask.dtype}};
  std::vector<std::string> stored{values.name, bitmask.name, shape.name};
  if (two_four) {
    if (cols % 4) inconsistent(shape, fmt::format("has {} columns: 2:4 sparsity needs a multiple of 4", cols));
    expect_tensor(values, {rows, cols / 2}, {values.dtype}, fmt::format("for a 2:4 sparse [{}, {}] weight the kept values", rows, cols));
  } else {
    if (values.shape.size() != 1 || values.decoder || values.numel() > rows * cols)
      inconsistent(values, fmt::format("is {} {}, but must be the at most {} kept values of a [{}, {}] weight, in one dimension",
                                       values.stored_type(), shape_to_string(values.shape), rows * cols, rows, cols));
    const TensorInfo& offsets = layer_tensor(*raw, base + ".row_offsets", prefix);
    expect_tensor(offsets, {rows}, {DType::I64, DType::I32}, fmt::format("for {} rows row_offsets", rows));
    side.push_back({offsets, DType::I64});
    stored.push_back(offsets.name);
  }
  expect_tensor(bitmask, {rows, (cols + 7) / 8}, {DType::U8, DType::I8}, fmt::format("for a [{}, {}] weight the bitmask", rows, cols));
  // Quantized values (sparsity over quantization) take the layer's scales; float values are the weight.
  std::optional<GroupScales> scales;
  if (values.dtype == DType::F8_E4M3 || values.dtype == DType::I8) {
    scales.emplace(*raw, prefix, values, rows, cols, c, 0);
    for (const SideRead& s : scales->side()) side.push_back(s);
    for (std::string& n : scales->stored()) stored.push_back(std::move(n));
    if (const TensorInfo* input = raw->find(prefix + ".input_scale")) stored.push_back(input->name);
  } else if (const TensorInfo* scale = raw->find(prefix + ".weight_scale")) {
    inconsistent(*scale, fmt::format("scales {} values, but only quantized (F8_E4M3 or I8) values take a scale", values.stored_type()));
  }
  const std::string name = fmt::format("{} {}{}", two_four ? "sparse-24-bitmask" : "sparse-bitmask", dtype_name(values.dtype),
                                       scales ? " scaled" : "");
  auto decoder = std::make_shared<SparseDecoder>(name, values, rows, cols, std::move(side), two_four,
                                                 std::move(scales));
  return {dense_entry(prefix + ".weight", values, {rows, cols}, decoder), std::move(stored)};
}

}  // namespace

// A sparse layer's tensors hang off `<prefix>.weight` or, since compressed-tensors' #219, `<prefix>`.
extern const LayerKind kSparseBitmaskKind{
    "compressed-tensors sparse (bitmask)",
    [](const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string& extra) {
      std::string base;
      if (!strip_suffix(t.name, ".bitmask", base) || !raw.find(base + ".compressed")) return false;
      if (!strip_suffix(base, ".weight", prefix)) prefix = base;
      extra = base;
      return true;
    },
    [](const QuantConfig& c) { return c.method == Method::CompressedTensors && !c.ct_sparsity.empty(); },
    [](const RawSource& raw, const std::string& prefix, const std::string& base, const QuantConfig& c) {
      if (c.ct_sparsity != "sparse-bitmask" && c.ct_sparsity != "sparse-24-bitmask") {
        const TensorInfo& t = raw->at(base + ".bitmask");
        throw Error(ErrorCode::QuantUnsupported,
                    fmt::format("compressed-tensors '{}' sparsity is not decoded (sparse-bitmask and sparse-24-bitmask are)", c.ct_sparsity),
                    raw->file_of(t), t.name);
      }
      return sparse_layer(raw, prefix, base, c);
    }};

}  // namespace wl::quant
