#include "weightloader/tensor.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

uint64_t shape_numel(const Shape& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d)
      throw Error(ErrorCode::ValidationOverflow, fmt::format("element count of shape {} overflows u64", shape_to_string(shape)));
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

namespace {

constexpr size_t kMappedThreshold = 2u << 20;

class HeapStorage final : public Storage {
 public:
  explicit HeapStorage(size_t bytes) {
    size_ = bytes;
    writable_ = true;
    if (bytes >= kMappedThreshold) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw Error(ErrorCode::Io, fmt::format("cannot allocate {} bytes", bytes));
      mapped_ = true;
      data_ = static_cast<std::byte*>(p);
    } else {
      void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
      if (!p) throw Error(ErrorCode::Io, fmt::format("cannot allocate {} bytes", bytes));
      data_ = static_cast<std::byte*>(p);
    }
  }
  ~HeapStorage() override {
    if (mapped_)
      ::munmap(data_, size_);
    else
      std::free(data_);
  }
  std::string describe() const override { return fmt::format("heap {} bytes", size_); }

 private:
  bool mapped_ = false;
};

// A region of a byte source's mapping (a file's, a memory region's); keeps the source alive.
class SourceRegionStorage final : public Storage {
 public:
  SourceRegionStorage(std::shared_ptr<const ByteSource> source, uint64_t offset, uint64_t length)
      : source_(std::move(source)), offset_(offset) {
    const uint64_t size = source_->current_size();  // a file may have shrunk since it was opened
    if (offset > size || length > size - offset)
      throw Error(ErrorCode::Truncated,
                  fmt::format("cannot map bytes [{}, {}): the source now has only {} bytes", offset, offset + length, size),
                  source_->name());
    size_ = length;
    if (length == 0) return;  // zero-length region: nothing to map
    const std::byte* base = source_->mapping();
    if (!base) throw Error(ErrorCode::InvalidArgument, "this source cannot be mapped", source_->name());
    data_ = const_cast<std::byte*>(base) + offset;  // read-only: writable_ stays false
  }
  std::string describe() const override {
    return fmt::format("mapping of {} [{}, {})", source_->name(), offset_, offset_ + size_);
  }

 private:
  std::shared_ptr<const ByteSource> source_;
  uint64_t offset_;
};

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= static_cast<int64_t>(shape[i]);
  }
  return strides;
}

}  // namespace

std::shared_ptr<Storage> allocate_storage(size_t bytes) { return std::make_shared<HeapStorage>(bytes); }

std::shared_ptr<Storage> map_source_region(std::shared_ptr<const ByteSource> source, uint64_t offset, uint64_t length) {
  return std::make_shared<SourceRegionStorage>(std::move(source), offset, length);
}

TensorView::TensorView(std::shared_ptr<Storage> storage, DType dtype, Shape shape, uint64_t byte_offset)
    : TensorView(std::move(storage), dtype, shape, contiguous_strides(shape), byte_offset) {}

TensorView::TensorView(std::shared_ptr<Storage> storage, DType dtype, Shape shape, std::vector<int64_t> strides,
                       uint64_t byte_offset)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
      byte_offset_(byte_offset) {
  if (!storage_) throw Error(ErrorCode::InvalidArgument, "tensor view without storage");
  if (strides_.size() != shape_.size())
    throw Error(ErrorCode::InvalidArgument, fmt::format("{} strides for a shape of rank {}", strides_.size(), shape_.size()));
  const uint64_t n = shape_numel(shape_);
  if (n == 0) return;
  // The furthest element must lie inside the storage (negative strides are not supported).
  uint64_t last = 0;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (strides_[i] < 0) throw Error(ErrorCode::InvalidArgument, "negative strides are not supported");
    last += (shape_[i] - 1) * static_cast<uint64_t>(strides_[i]);
  }
  const uint64_t end = byte_offset_ + (last + 1) * dtype_size(dtype_);
  if (end > storage_->size())
    throw Error(ErrorCode::SliceOutOfBounds,
                fmt::format("view {} {} at byte {} needs {} bytes but the storage has {}", dtype_name(dtype_),
                            shape_to_string(shape_), byte_offset_, end, storage_->size()));
}

TensorView TensorView::empty(DType dtype, Shape shape) {
  const uint64_t bytes = shape_numel(shape) * dtype_size(dtype);
  return TensorView(allocate_storage(bytes), dtype, std::move(shape), 0);
}

bool TensorView::is_contiguous() const noexcept { return strides_ == contiguous_strides(shape_); }

TensorView TensorView::rows(uint64_t begin, uint64_t end) const {
  if (shape_.empty() || begin > end || end > shape_[0])
    throw Error(ErrorCode::SliceOutOfBounds,
                fmt::format("rows [{}, {}) of a tensor of shape {}", begin, end, shape_to_string(shape_)));
  Shape s = shape_;
  s[0] = end - begin;
  return TensorView(storage_, dtype_, s, strides_, byte_offset_ + begin * static_cast<uint64_t>(strides_[0]) * dtype_size(dtype_));
}

TensorView TensorView::reshaped(Shape shape) const {
  if (!is_contiguous()) throw Error(ErrorCode::InvalidArgument, "reshape of a non-contiguous view");
  if (shape_numel(shape) != numel())
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("cannot reshape {} into {}: element counts differ", shape_to_string(shape_), shape_to_string(shape)));
  return TensorView(storage_, dtype_, std::move(shape), byte_offset_);
}

TensorView TensorView::to(DType dtype) const {
  TensorView out = empty(dtype, shape_);
  const uint64_t n = numel();
  if (is_contiguous()) {
    convert(dtype_, raw(), dtype, out.raw(), n);
    return out;
  }
  // Gather element by element in row-major order (non-contiguous views are rare and small).
  const size_t in_size = dtype_size(dtype_), out_size = dtype_size(dtype);
  std::vector<uint64_t> idx(shape_.size(), 0);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t off = 0;
    for (size_t d = 0; d < shape_.size(); ++d) off += idx[d] * static_cast<uint64_t>(strides_[d]);
    convert(dtype_, raw() + off * in_size, dtype, out.raw() + i * out_size, 1);
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace wl
