// Tensor views over shared storage: a read-only mapping of a byte source or an aligned heap buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weightloader/device.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/export.hpp"

namespace wl {

class ByteSource;

using Shape = std::vector<uint64_t>;

// Element count of a shape; throws ValidationOverflow if it does not fit in u64.
WL_API uint64_t shape_numel(const Shape& shape);
WL_API std::string shape_to_string(const Shape& shape);  // "[2, 3]"

// Bytes a tensor owns. Subclasses: heap buffers and read-only file mappings.
class WL_API Storage {
 public:
  virtual ~Storage() = default;
  std::byte* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool writable() const noexcept { return writable_; }
  virtual std::string describe() const = 0;  // "heap 64 MiB" / "mmap file.safetensors [off, off+len)"
  // Where the bytes are; only host ("cpu") storage may be read or written through data() on the host.
  virtual Device device() const { return {}; }

 protected:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
};

// An aligned, writable heap buffer. Large buffers are anonymous mappings (given back to the system
// whole when freed), under the system's huge-page policy: no advice. Not zeroed.
WL_API std::shared_ptr<Storage> allocate_storage(size_t bytes);

// [offset, offset + length) of a byte source's mapping (a file mapped read-only and private to
// the process, a memory region); keeps the source alive. Truncated if the source is now shorter;
// InvalidArgument if it cannot be mapped. A file must not change while it is mapped.
WL_API std::shared_ptr<Storage> map_source_region(std::shared_ptr<const ByteSource> source, uint64_t offset,
                                                  uint64_t length);

// A typed, strided window into a storage; it keeps the storage alive.
class WL_API TensorView {
 public:
  TensorView() = default;
  // Row-major contiguous view of `shape` starting at `byte_offset`. Checks that it fits.
  TensorView(std::shared_ptr<Storage> storage, DType dtype, Shape shape, uint64_t byte_offset = 0);
  // Explicit element strides.
  TensorView(std::shared_ptr<Storage> storage, DType dtype, Shape shape, std::vector<int64_t> strides,
             uint64_t byte_offset);

  // A fresh heap-backed contiguous tensor.
  static TensorView empty(DType dtype, Shape shape);

  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  const std::vector<int64_t>& strides() const noexcept { return strides_; }
  uint64_t byte_offset() const noexcept { return byte_offset_; }
  const std::shared_ptr<Storage>& storage() const noexcept { return storage_; }
  uint64_t numel() const { return shape_numel(shape_); }
  uint64_t nbytes() const { return numel() * dtype_size(dtype_); }
  bool is_contiguous() const noexcept;
  bool defined() const noexcept { return storage_ != nullptr; }

  std::byte* raw() const noexcept { return storage_ ? storage_->data() + byte_offset_ : nullptr; }
  template <typename T>
  T* data() const noexcept { return reinterpret_cast<T*>(raw()); }

  // Rows [begin, end) of dimension 0, sharing storage.
  TensorView rows(uint64_t begin, uint64_t end) const;
  // Same storage and bytes seen with another shape of the same element count (contiguous only).
  TensorView reshaped(Shape shape) const;
  // A contiguous copy converted to `dtype` (a copy even when the dtype is the same).
  TensorView to(DType dtype) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<int64_t> strides_;
  uint64_t byte_offset_ = 0;
};

}  // namespace wl
