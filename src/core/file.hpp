// Local files: the file system's byte source, and atomic writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl {

class Storage;

// A local file as a byte source: pread, O_DIRECT through a second descriptor (read, or queued on a
// reader thread's io_uring), a lazily made read-only mapping, page-cache residency. Thread-safe.
class File final : public ByteSource {
 public:
  // Opens for reading; FileNotFound / Io errors name the path.
  explicit File(std::string path);
  ~File() override;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& name() const noexcept override { return path_; }
  const std::string& path() const noexcept { return path_; }
  uint64_t size() const noexcept override { return size_; }
  SourceKind kind() const noexcept override { return SourceKind::LocalFile; }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override;
  uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const override;  // preadv

  // False if the file system refuses O_DIRECT (the second descriptor is opened once, on first ask).
  bool supports_direct() const override;
  uint64_t read_direct(uint64_t offset, void* dst, uint64_t length) const override;
  void queue_direct(UringQueue& queue, uint64_t offset, void* dst, uint64_t length, uint64_t tag) const override;
  // A mapping of the whole file as it was opened (made once, advised sequential).
  const std::byte* mapping() const override;
  // A fresh writable copy-on-write mapping of the whole file as it is now (MAP_PRIVATE: writes stay
  // in it, never reaching the file nor any other mapping), unmapped when its last holder lets go,
  // which may be after this File is closed and the file deleted; null for an empty file.
  std::shared_ptr<Storage> private_copy() const;
  uint64_t current_size() const override;  // fstat now
  // Bytes of the file now in the page cache (cachestat, else mincore).
  std::optional<uint64_t> resident_bytes() const override;
  // posix_fadvise / madvise; failures are ignored (they are only hints).
  void hint(uint64_t offset, uint64_t length, AccessHint hint) const override;

 private:
  int direct_fd() const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  mutable std::mutex mutex_;  // guards the lazily made direct_fd_ and map_
  mutable int direct_fd_ = -2;  // -2: not tried yet
  mutable std::byte* map_ = nullptr;
};

// An Error from errno after a failed call: FileNotFound for ENOENT, Io otherwise; "what: strerror",
// with the number (Error::os_errno).
Error errno_error(const std::string& what, const std::string& path);
[[noreturn]] void throw_errno(const std::string& what, const std::string& path);

// Positioned reads on a descriptor until `length` bytes or the end (with `block`, also after a
// read that ends inside a block: O_DIRECT's end of file); errors name `name`.
uint64_t pread_fully(int fd, uint64_t offset, void* dst, uint64_t length, const std::string& name,
                     const char* what = "read", uint64_t block = 0);

}  // namespace wl
