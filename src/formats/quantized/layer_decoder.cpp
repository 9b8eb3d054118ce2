#include "formats/quantized/layer_decoder.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::quant {

LayerDecoder::LayerDecoder(std::string name, const TensorInfo& packed, uint64_t dense_elems, RawSource raw,
                           std::vector<SideTensor> side)
    : name_(std::move(name)), dense_elems_(dense_elems), packed_bytes_(packed.nbytes), raw_(std::move(raw)),
      side_(std::move(side)) {}

void LayerDecoder::prepare() const {
  std::call_once(once_, [&] {
    std::vector<TensorView> values;
    values.reserve(side_.size());
    for (const SideTensor& s : side_) values.push_back(raw_->load(*s.info, s.as));
    unpack_side(values);
  });
}

void LayerDecoder::decode(const std::byte* src, uint64_t nblocks, void* dst) const {
  auto* out = static_cast<float*>(dst);
  for (uint64_t b = 0; b < nblocks; ++b) decode_layer(src + b * packed_bytes_, out + b * dense_elems_);
}

TensorInfo dense_entry(const std::string& name, const TensorInfo& packed, Shape shape, std::shared_ptr<const Decoder> decoder) {
  TensorInfo t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.file = packed.file;
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
              t.file, t.name);
}

}  // namespace wl::quant
