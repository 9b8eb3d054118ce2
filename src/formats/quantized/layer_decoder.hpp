// The shared shape of the quantized-layer decoders: one block is the whole dense weight [out, in],
// decoded from the packed tensor's bytes (the block the I/O engine reads) and small side tensors
// (scales, zero points, g_idx, absmax) that the read hands to prepare() (Decoder::side_reads).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "formats/quantized/quant_config.hpp"
#include "weightloader/source.hpp"
#include "weightloader/tensor.hpp"

namespace wl::quant {

// The checkpoint as stored, whose tensors a layer's decoder is made from (it keeps none of it).
using RawSource = std::shared_ptr<const WeightSource>;

class LayerDecoder : public Decoder {
 public:
  // The dense weight is `rows` x `cols` (row-major, the layout decode_rows writes).
  // `side`: what it reads beside the packed bytes, in the order unpack_side() takes their values.
  LayerDecoder(std::string name, const TensorInfo& packed, uint64_t rows, uint64_t cols, std::vector<SideRead> side);
  std::string name() const override { return name_; }
  uint64_t block_elems() const override { return dense_elems_; }
  uint64_t block_bytes() const override { return packed_bytes_; }
  DType output_dtype() const override { return DType::F32; }
  std::span<const SideRead> side_reads() const override { return side_; }
  bool prepared() const override { return prepared_.load(std::memory_order_acquire); }
  void prepare(std::span<const TensorView> side) const override;
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override;
  // Any other dtype: rows decoded a cache-sized tile at a time into F32, each tile converted once.
  bool decodes_as(DType dtype) const override { return dtype != DType::F32; }
  void decode_as(DType dtype, const std::byte* src, uint64_t nblocks, void* dst) const override;
  uint64_t row_elems() const override { return cols_; }
  void decode_block_rows(const std::byte* block, uint64_t row0, uint64_t row1, void* dst) const override {
    decode_rows(block, row0, row1, static_cast<float*>(dst));
  }

 protected:
  // Called once, with the side tensors' values: derive what decode_rows needs from them.
  virtual void unpack_side(const std::vector<TensorView>& side) const = 0;
  // Rows [row0, row1) of the dense weight from the packed tensor's bytes, into `out` (row0 first).
  virtual void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const = 0;

 private:
  std::string name_;
  uint64_t rows_, cols_, dense_elems_, packed_bytes_;
  std::vector<SideRead> side_;
  mutable std::once_flag once_;
  mutable std::atomic<bool> prepared_{false};
};

// One dense weight presented in place of a quantized layer's tensors.
struct QuantLayer {
  TensorInfo dense;                 // <prefix>.weight, F32 [out, in], decoded as it is read
  std::vector<std::string> stored;  // the checkpoint tensors it stands for (hidden from the catalogue)
};

// The dense tensor's catalogue entry: the packed tensor's bytes, `shape`, `decoder`.
TensorInfo dense_entry(const std::string& name, const TensorInfo& packed, Shape shape, std::shared_ptr<const Decoder> decoder);

// `raw`'s tensor `name`, or QuantTensorsInconsistent saying which layer needs it.
const TensorInfo& layer_tensor(const WeightSource& raw, const std::string& name, const std::string& layer);
// QuantTensorsInconsistent naming the tensor `t` and what is wrong with it (not its file: the
// catalogue knows it, and dense_view, or the read that prepares the decoder, adds it).
[[noreturn]] void inconsistent(const TensorInfo& t, const std::string& what);
// Checks rank, dims (0 = any) and dtype; throws QuantTensorsInconsistent naming the tensor (as inconsistent()).
void expect_tensor(const TensorInfo& t, const Shape& dims, std::initializer_list<DType> dtypes, const std::string& rule);

}  // namespace wl::quant
