// Files opened for reading, with positioned reads that name the file in every error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wl {

class File {
 public:
  // Opens for reading; FileNotFound / Io errors name the path.
  explicit File(std::string path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const noexcept { return path_; }
  uint64_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_; }

  // Reads exactly `length` bytes at `offset`; a short read is ErrorCode::Truncated.
  void read_exact(uint64_t offset, void* dst, uint64_t length) const;
  // Reads up to `length` bytes at `offset` (fewer at end of file); returns the count.
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const;
  // Reads [offset, offset + length) into a string (for headers).
  std::string read_string(uint64_t offset, uint64_t length) const;

  // The block size O_DIRECT reads align offsets, lengths and buffers to.
  static constexpr uint64_t kDirectAlign = 4096;
  // A second descriptor opened with O_DIRECT (once); -1 if the file system refuses O_DIRECT.
  int direct_fd();
  // Reads whole aligned blocks with O_DIRECT: `offset`, `length` and `dst` must be multiples of
  // kDirectAlign. Returns the bytes read (fewer only at the end of the file).
  uint64_t read_direct(uint64_t offset, void* dst, uint64_t length);
  // A read-only mapping of the whole file as it was opened (made once, advised sequential).
  // Touching it past the file's current end raises SIGBUS: copy out of it under a SigbusGuard.
  const std::byte* mapping();
  // Bytes of the file now in the page cache (cachestat, else mincore).
  uint64_t cached_bytes();
  // posix_fadvise / madvise hints; failures are ignored (they are only hints).
  void advise(uint64_t offset, uint64_t length, int fadvice) const;
  void advise_mapping(uint64_t offset, uint64_t length, int madvice);

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::mutex mutex_;  // guards the lazily made direct_fd_ and map_
  int direct_fd_ = -2;  // -2: not tried yet
  std::byte* map_ = nullptr;
};

// Files shared by the reads of one source: each path is opened once.
class FileCache {
 public:
  std::shared_ptr<File> get(const std::string& path);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<File>> files_;
};

// Writes a file atomically: bytes go to `path.tmp-XXXX`, which is renamed over `path` on commit();
// if the writer dies without commit(), the temporary file is removed and `path` is untouched.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t length);
  uint64_t written() const noexcept { return written_; }
  void commit();  // fsync + rename

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

}  // namespace wl
