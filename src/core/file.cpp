#include "core/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {
[[noreturn]] void throw_errno(const std::string& what, const std::string& path) {
  const int err = errno;
  throw Error(err == ENOENT ? ErrorCode::FileNotFound : ErrorCode::Io, fmt::format("{}: {}", what, std::strerror(err)),
              path);
}
}  // namespace

File::File(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw_errno("cannot open", path_);
  struct stat st{};
  if (::fstat(fd_, &st) != 0) {
    ::close(fd_);
    throw_errno("cannot stat", path_);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw Error(ErrorCode::InvalidArgument, "is a directory, not a file", path_);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t File::read_some(uint64_t offset, void* dst, uint64_t length) const {
  auto* out = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, 1ull << 30));
    const ssize_t n = ::pread(fd_, out + done, want, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(fmt::format("read of {} bytes at offset {} failed", length, offset), path_);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return done;
}

void File::read_exact(uint64_t offset, void* dst, uint64_t length) const {
  const uint64_t got = read_some(offset, dst, length);
  if (got != length)
    throw Error(ErrorCode::Truncated,
                fmt::format("file ended early: wanted bytes [{}, {}) but only {} could be read (the file may have "
                            "shrunk while loading)",
                            offset, offset + length, got),
                path_);
}

std::string File::read_string(uint64_t offset, uint64_t length) const {
  std::string out(length, '\0');
  read_exact(offset, out.data(), length);
  return out;
}

std::shared_ptr<File> FileCache::get(const std::string& path) {
  std::lock_guard lock(mutex_);
  auto& slot = files_[path];
  if (!slot) slot = std::make_shared<File>(path);
  return slot;
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  std::random_device rd;
  tmp_path_ = fmt::format("{}.tmp-{:08x}", path_, rd());
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_errno("cannot create", tmp_path_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

void AtomicFileWriter::write(const void* data, size_t length) {
  const auto* in = static_cast<const char*>(data);
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::write(fd_, in + done, std::min<size_t>(length - done, 1u << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write failed", tmp_path_);
    }
    done += static_cast<size_t>(n);
  }
  written_ += length;
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) throw_errno("fsync failed", tmp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    throw_errno("close failed", tmp_path_);
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp_path_.c_str());
    throw_errno("cannot rename temporary file into place", path_);
  }
}

}  // namespace wl
