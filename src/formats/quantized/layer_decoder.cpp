#include "formats/quantized/layer_decoder.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "weightloader/dtype_convert.hpp"

#include "weightloader/error.hpp"

namespace wl::quant {

LayerDecoder::LayerDecoder(std::string name, const TensorInfo& packed, uint64_t rows, uint64_t cols, std::vector<SideRead> side)
    : name_(std::move(name)), rows_(rows), cols_(cols), dense_elems_(rows * cols), packed_bytes_(packed.nbytes),
      side_(std::move(side)) {}

void LayerDecoder::prepare(std::span<const TensorView> side) const {
  std::call_once(once_, [&] {
    for (size_t i = 0; i < side_.size() && i < side.size(); ++i)
      if (side[i].dtype() != side_[i].as || side[i].shape() != side_[i].tensor.shape)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("{} was handed {} {} for this side tensor, which it reads as {} {}", name_, dtype_name(side[i].dtype()),
                                shape_to_string(side[i].shape()), dtype_name(side_[i].as), shape_to_string(side_[i].tensor.shape)),
                    {}, side_[i].tensor.name);
    if (side.size() != side_.size())
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("{} reads {} side tensors but was handed {}", name_, side_.size(), side.size()));
    unpack_side(std::vector<TensorView>(side.begin(), side.end()));
    prepared_.store(true, std::memory_order_release);
  });
}

void LayerDecoder::decode(const std::byte* src, uint64_t nblocks, void* dst) const {
  auto* out = static_cast<float*>(dst);
  for (uint64_t b = 0; b < nblocks; ++b) decode_rows(src + b * packed_bytes_, 0, rows_, out + b * dense_elems_);
}

void LayerDecoder::decode_as(DType dtype, const std::byte* src, uint64_t nblocks, void* dst) const {
  constexpr uint64_t kTileBytes = 256u << 10;  // F32 values per tile: well inside L2
  const uint64_t tile_rows = std::max<uint64_t>(16, kTileBytes / std::max<uint64_t>(1, cols_ * sizeof(float))) / 16 * 16;
  thread_local std::vector<float> tile;
  tile.resize(std::max<size_t>(tile.size(), std::min(tile_rows, rows_) * cols_));
  auto* out = static_cast<std::byte*>(dst);
  const size_t out_size = dtype_size(dtype);
  for (uint64_t b = 0; b < nblocks; ++b)
    for (uint64_t r = 0; r < rows_; r += tile_rows) {
      const uint64_t end = std::min(rows_, r + tile_rows);
      decode_rows(src + b * packed_bytes_, r, end, tile.data());
      convert(DType::F32, tile.data(), dtype, out + (b * dense_elems_ + r * cols_) * out_size, (end - r) * cols_);
    }
}

TensorInfo dense_entry(const std::string& name, const TensorInfo& packed, Shape shape, std::shared_ptr<const Decoder> decoder) {
  TensorInfo t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.source = packed.source;
  t.offset = packed.offset;
  t.nbytes = packed.nbytes;
  t.decoder = std::move(decoder);
  return t;
}

const TensorInfo& layer_tensor(const WeightSource& raw, const std::string& name, const std::string& layer) {
  if (const TensorInfo* t = raw.find(name)) return *t;
  throw Error(ErrorCode::QuantTensorsInconsistent, fmt::format("quantized layer '{}' has no tensor '{}'", layer, name),
              raw.origin(), name);
}

void inconsistent(const TensorInfo& t, const std::string& what) {
  throw Error(ErrorCode::QuantTensorsInconsistent, what, {}, t.name);
}

void expect_tensor(const TensorInfo& t, const Shape& dims, std::initializer_list<DType> dtypes, const std::string& rule) {
  bool shape_ok = t.shape.size() == dims.size();
  for (size_t d = 0; shape_ok && d < dims.size(); ++d) shape_ok = dims[d] == 0 || dims[d] == t.shape[d];
  std::vector<std::string> wanted;
  for (DType d : dtypes) wanted.emplace_back(dtype_name(d));
  const bool dtype_ok = std::find(dtypes.begin(), dtypes.end(), t.dtype) != dtypes.end();
  if (shape_ok && dtype_ok && !t.decoder) return;
  std::vector<std::string> shown;
  for (uint64_t d : dims) shown.push_back(d ? std::to_string(d) : "*");
  throw Error(ErrorCode::QuantTensorsInconsistent,
              fmt::format("is {} {}, but {} must be {} [{}]", t.stored_type(), shape_to_string(t.shape), rule,
                          fmt::join(wanted, "/"), fmt::join(shown, ", ")),
              {}, t.name);
}

}  // namespace wl::quant
