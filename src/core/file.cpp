#include "core/file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <vector>

#include <cerrno>
#include <climits>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "core/uring_queue.hpp"
#include "weightloader/error.hpp"
#include "weightloader/tensor.hpp"

// cachestat(2) (Linux 6.5) has one number on every architecture of the unified syscall table;
// glibc 2.36 does not name it yet. Older kernels answer ENOSYS and we fall back to mincore.
#if !defined(SYS_cachestat) && (defined(__x86_64__) || defined(__aarch64__))
#define SYS_cachestat 451
#endif

namespace wl {

Error errno_error(const std::string& what, const std::string& path) {
  const int err = errno;
  return Error(err == ENOENT ? ErrorCode::FileNotFound : ErrorCode::Io, fmt::format("{}: {}", what, std::strerror(err)), path)
      .set_os_errno(err);
}

void throw_errno(const std::string& what, const std::string& path) { throw errno_error(what, path); }

namespace {

// File::private_copy's mapping: writable, unmapped with its last holder.
class PrivateMapping final : public Storage {
 public:
  PrivateMapping(void* data, size_t size, std::string path) : path_(std::move(path)) {
    data_ = static_cast<std::byte*>(data);
    size_ = size;
    writable_ = true;
  }
  ~PrivateMapping() override { ::munmap(data_, size_); }
  std::string describe() const override { return fmt::format("private copy-on-write mapping of {} ({} bytes)", path_, size_); }

 private:
  std::string path_;
};
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
  if (map_) ::munmap(map_, size_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

int File::direct_fd() const {
  std::lock_guard lock(mutex_);
  if (direct_fd_ == -2) direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (direct_fd_ < 0) direct_fd_ = -1;
  return direct_fd_;
}

bool File::supports_direct() const { return direct_fd() >= 0; }

uint64_t pread_fully(int fd, uint64_t offset, void* dst, uint64_t length, const std::string& name, const char* what,
                     uint64_t block) {
  auto* out = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, 1ull << 30));
    const ssize_t n = ::pread(fd, out + done, want, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(fmt::format("{} of {} bytes at offset {} failed", what, length, offset), name);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
    if (block && done % block != 0) break;  // a partial block: the end of the file
  }
  return done;
}

uint64_t File::read_direct(uint64_t offset, void* dst, uint64_t length) const {
  const int fd = direct_fd();
  if (fd < 0) throw Error(ErrorCode::Io, "the file system does not support O_DIRECT reads (use io=pread)", path_);
  return pread_fully(fd, offset, dst, length, path_, "O_DIRECT read", direct_alignment());
}

void File::queue_direct(UringQueue& queue, uint64_t offset, void* dst, uint64_t length, uint64_t tag) const {
  const int fd = direct_fd();
  if (fd < 0) throw Error(ErrorCode::Io, "the file system does not support O_DIRECT reads (use io=pread)", path_);
  queue.queue_read(fd, offset, dst, length, tag);
}

const std::byte* File::mapping() const {
  std::lock_guard lock(mutex_);
  if (!map_ && size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) throw_errno(fmt::format("mmap of {} bytes failed", size_), path_);
    ::madvise(p, size_, MADV_SEQUENTIAL);
    map_ = static_cast<std::byte*>(p);
  }
  return map_;
}

std::shared_ptr<Storage> File::private_copy() const {
  const uint64_t size = current_size();
  if (size == 0) return nullptr;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) throw_errno(fmt::format("mmap of {} bytes failed", size), path_);
  return std::make_shared<PrivateMapping>(p, size, path_);
}

uint64_t File::current_size() const {
  struct stat st{};
  if (::fstat(fd_, &st) != 0) throw_errno("cannot stat", path_);
  return static_cast<uint64_t>(st.st_size);
}

std::optional<uint64_t> File::resident_bytes() const {
  if (size_ == 0) return 0;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
#ifdef SYS_cachestat
  struct {
    uint64_t off, len;
  } range{0, 0};  // len 0: to the end of the file
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } stat{};
  if (::syscall(SYS_cachestat, fd_, &range, &stat, 0) == 0) return std::min(size_, stat.nr_cache * page);
#endif
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) return std::nullopt;
  std::vector<unsigned char> resident((size_ + page - 1) / page);
  uint64_t cached = 0;
  if (::mincore(p, size_, resident.data()) == 0)
    for (unsigned char r : resident) cached += (r & 1) ? page : 0;
  ::munmap(p, size_);
  return std::min(size_, cached);
}

void File::hint(uint64_t offset, uint64_t length, AccessHint hint) const {
  if (hint == AccessHint::Sequential || hint == AccessHint::WillNeed) {
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                    hint == AccessHint::Sequential ? POSIX_FADV_SEQUENTIAL : POSIX_FADV_WILLNEED);
    return;
  }
  const std::byte* base = mapping();
  if (!base || offset >= size_) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  length = std::min(length, size_ - offset);
  // Whole pages inside the range only: a page shared with a neighbouring range is left alone.
  const uint64_t begin = (offset + page - 1) / page * page, end = (offset + length) / page * page;
  if (end > begin)
    ::madvise(const_cast<std::byte*>(base) + begin, end - begin,
              hint == AccessHint::MappedWillNeed ? MADV_WILLNEED : MADV_DONTNEED);
}

uint64_t File::read_some(uint64_t offset, void* dst, uint64_t length) const {
  return pread_fully(fd_, offset, dst, length, path_);
}

uint64_t File::read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const {
  std::vector<iovec> iov(std::min<size_t>(count, IOV_MAX));
  for (size_t i = 0; i < iov.size(); ++i) iov[i] = {buffers[i].data, static_cast<size_t>(buffers[i].length)};
  for (;;) {
    const ssize_t n = ::preadv(fd_, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(offset));
    if (n >= 0) return static_cast<uint64_t>(n);
    if (errno != EINTR) throw_errno(fmt::format("read of {} buffers at offset {} failed", count, offset), path_);
  }
}

}  // namespace wl
