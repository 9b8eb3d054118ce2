#include "formats/offset_decoder.hpp"

#include <fmt/format.h>

#include "weightloader/dtype_convert.hpp"

namespace wl {

namespace {

class OffsetDecoder final : public Decoder {
 public:
  OffsetDecoder(std::shared_ptr<const Decoder> inner, DType stored, float offset)
      : inner_(std::move(inner)), stored_(stored), offset_(offset) {}
  std::string name() const override {
    return fmt::format("{} stored as {} + w", inner_ ? inner_->name() : std::string(dtype_name(stored_)), offset_);
  }
  std::string spec() const override {
    const std::string inner = inner_ ? inner_->spec() : "null";
    if (inner.empty()) return {};
    return fmt::format(R"({{"kind":"offset","offset":{},"stored":"{}","inner":{}}})", offset_, dtype_name(stored_), inner);
  }
  uint64_t block_elems() const override { return inner_ ? inner_->block_elems() : 1; }
  uint64_t block_bytes() const override { return inner_ ? inner_->block_bytes() : dtype_size(stored_); }
  DType output_dtype() const override { return DType::F32; }
  std::span<const SideRead> side_reads() const override { return inner_ ? inner_->side_reads() : std::span<const SideRead>{}; }
  bool prepared() const override { return !inner_ || inner_->prepared(); }
  void prepare(std::span<const TensorView> side) const override {
    if (inner_) inner_->prepare(side);
  }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    const uint64_t n = nblocks * block_elems();
    if (inner_) inner_->decode_as(DType::F32, src, nblocks, dst);
    else convert(stored_, src, DType::F32, dst, n);
    for (float* p = static_cast<float*>(dst), *end = p + n; p != end; ++p) *p -= offset_;
  }

 private:
  std::shared_ptr<const Decoder> inner_;
  DType stored_;
  float offset_;
};

}  // namespace

std::shared_ptr<const Decoder> offset_decoder(std::shared_ptr<const Decoder> inner, DType stored, float offset) {
  return std::make_shared<OffsetDecoder>(std::move(inner), stored, offset);
}

}  // namespace wl
