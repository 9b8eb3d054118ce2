#include "formats/quantized/sparse_bitmask.hpp"

#include <bit>

#include <fmt/format.h>

#include "weightloader/dtype_convert.hpp"

namespace wl::quant {

namespace {

class SparseBitmaskDecoder final : public LayerDecoder {
 public:
  SparseBitmaskDecoder(const TensorInfo& values, uint64_t rows, uint64_t cols, RawSource raw, std::vector<SideTensor> side,
                       const TensorInfo* bitmask)
      : LayerDecoder(fmt::format("sparse-bitmask {}", dtype_name(values.dtype)), values, rows, cols, std::move(raw),
                     std::move(side)),
        rows_(rows), cols_(cols), total_(values.numel()), dtype_(values.dtype), bitmask_(bitmask) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    const auto* bits = reinterpret_cast<const uint8_t*>(side[0].raw());
    mask_.assign(bits, bits + side[0].numel());
    const auto* offsets = reinterpret_cast<const int64_t*>(side[1].raw());
    offsets_.assign(offsets, offsets + rows_);
    // Each row's values must start where its offset says and the bitmask must count them all.
    const uint64_t row_bytes = (cols_ + 7) / 8;
    uint64_t at = 0;
    for (uint64_t r = 0; r < rows_; ++r) {
      if (offsets_[r] < 0 || uint64_t(offsets_[r]) != at)
        inconsistent(*bitmask_, fmt::format("row {}'s values start at {} by row_offsets but at {} by the bitmask", r, offsets_[r], at));
      for (uint64_t b = 0; b < row_bytes; ++b) {
        uint8_t byte = mask_[r * row_bytes + b];
        if (b + 1 == row_bytes && cols_ % 8) byte &= uint8_t((1u << (cols_ % 8)) - 1);  // bits past the row's end
        at += uint64_t(std::popcount(byte));
      }
    }
    if (at != total_) inconsistent(*bitmask_, fmt::format("marks {} non-zero values, but the compressed tensor holds {}", at, total_));
  }

  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const uint64_t row_bytes = (cols_ + 7) / 8, size = dtype_size(dtype_);
    std::vector<float> values;
    for (uint64_t r = row0; r < row1; ++r, out += cols_) {
      const uint64_t begin = uint64_t(offsets_[r]), end = r + 1 < rows_ ? uint64_t(offsets_[r + 1]) : total_;
      values.resize(end - begin);
      convert(dtype_, packed + begin * size, DType::F32, values.data(), values.size());
      const uint8_t* bits = mask_.data() + r * row_bytes;
      for (uint64_t c = 0, v = 0; c < cols_; ++c) out[c] = (bits[c / 8] >> (c % 8)) & 1 ? values[v++] : 0.0f;
    }
  }

  uint64_t rows_, cols_, total_;
  DType dtype_;
  const TensorInfo* bitmask_;  // the source's entry (its source outlives the decoder)
  mutable std::vector<uint8_t> mask_;
  mutable std::vector<int64_t> offsets_;
};

}  // namespace

QuantLayer sparse_bitmask_layer(const RawSource& raw, const std::string& prefix) {
  const std::string w = prefix + ".weight";
  const TensorInfo& values = layer_tensor(*raw, w + ".compressed", prefix);
  const TensorInfo& bitmask = layer_tensor(*raw, w + ".bitmask", prefix);
  const TensorInfo& offsets = layer_tensor(*raw, w + ".row_offsets", prefix);
  const TensorInfo& shape = layer_tensor(*raw, w + ".shape", prefix);
  expect_tensor(shape, {2}, {DType::I64, DType::I32}, "weight.shape, the dense (rows, cols),");
  const TensorView dims = raw->load(shape, DType::I64);
  const auto* d = reinterpret_cast<const int64_t*>(dims.raw());
  if (d[0] <= 0 || d[1] <= 0) inconsistent(shape, fmt::format("({}, {}) is not a matrix's shape", d[0], d[1]));
  const uint64_t rows = uint64_t(d[0]), cols = uint64_t(d[1]);
  if (values.shape.size() != 1 || values.decoder || values.numel() > rows * cols)
    inconsistent(values, fmt::format("is {} {}, but must be the at most {} non-zero values of a [{}, {}] weight, in one dimension",
                                     values.stored_type(), shape_to_string(values.shape), rows * cols, rows, cols));
  expect_tensor(bitmask, {rows, (cols + 7) / 8}, {DType::U8, DType::I8}, fmt::format("for a [{}, {}] weight the bitmask", rows, cols));
  expect_tensor(offsets, {rows}, {DType::I64, DType::I32}, fmt::format("for {} rows row_offsets", rows));
  auto decoder = std::make_shared<SparseBitmaskDecoder>(values, rows, cols, raw,
                                                        std::vector<SideTensor>{{&bitmask, bitmask.dtype}, {&offsets, DType::I64}}, &bitmask);
  return {dense_entry(w, values, {rows, cols}, decoder), {values.name, bitmask.name, offsets.name, shape.name}};
}

}  // namespace wl::quant
