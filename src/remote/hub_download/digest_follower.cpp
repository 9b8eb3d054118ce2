#include "remote/hub_download/digest_follower.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {
constexpr uint64_t kStep = 8ull << 20;  // hashed and handed to writeback at a time
}

DigestFollower::DigestFollower(int fd, std::string path, std::optional<DigestKind> kind, uint64_t size)
    : fd_(fd),
      path_(std::move(path)),
      digest_(kind ? std::make_unique<ContentDigest>(*kind, size, path_) : nullptr),
      size_(size),
      thread_([this](std::stop_token stop) { run(stop); }) {}

DigestFollower::~DigestFollower() {
  thread_.request_stop();
  changed_.notify_all();
}

void DigestFollower::advance(uint64_t prefix) {
  {
    std::lock_guard lock(mutex_);
    if (prefix <= prefix_) return;
    prefix_ = prefix;
  }
  changed_.notify_all();
}

void DigestFollower::run(std::stop_token stop) {
  std::vector<std::byte> buffer;
  uint64_t flushed = 0;  // handed to writeback up to here
  std::unique_lock lock(mutex_);
  while (hashed_ < size_ && !error_) {
    if (!changed_.wait(lock, stop, [&] { return prefix_ > hashed_; })) return;  // stopped
    const uint64_t from = hashed_, n = std::min(kStep, prefix_ - hashed_);
    lock.unlock();
    try {
      buffer.resize(n);
      for (uint64_t got = 0; got < n;) {
        const ssize_t r = ::pread(fd_, buffer.data() + got, n - got, static_cast<off_t>(from + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw_errno(fmt::format("cannot read back bytes [{}, {}) to check them", from + got, from + n), path_);
        if (r == 0)
          throw Error(ErrorCode::Io, fmt::format("cannot read back bytes [{}, {}) to check them: end of file", from + got, from + n),
                      path_);
        got += static_cast<uint64_t>(r);
      }
      if (digest_) digest_->update(buffer.data(), n);
      // Asynchronous writeback of whole steps behind the writers, so that the flush before the
      // final rename finds most of the file on disk (not of partly written pages: a page under
      // writeback makes the next write into it wait).
      if (const uint64_t whole = (from + n) / kStep * kStep; whole > flushed) {
        ::sync_file_range(fd_, static_cast<off_t>(flushed), static_cast<off_t>(whole - flushed), SYNC_FILE_RANGE_WRITE);
        flushed = whole;
      }
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      break;
    }
    lock.lock();
    hashed_ = from + n;
  }
  changed_.notify_all();
}

std::string DigestFollower::finish() {
  advance(size_);
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return hashed_ >= size_ || error_; });
  if (error_) std::rethrow_exception(error_);
  return digest_ ? digest_->hex() : std::string();
}

}  // namespace wl::remote
