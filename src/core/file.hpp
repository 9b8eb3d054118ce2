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

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
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
