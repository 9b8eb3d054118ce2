// One reader thread's io_uring (liburing): reads queued, sent to the kernel together and completed
// in any order. io=uring's way to keep many O_DIRECT reads in flight from few threads (the
// engine's core/direct_reads.hpp cuts and issues them; ByteSource::queue_direct queues them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct io_uring;

namespace wl {

// Not thread-safe: each reader thread owns its own.
class UringQueue {
 public:
  // A ring of `depth` entries. Io naming `name` (the file about to be read) with the errno when the
  // kernel refuses one (see uring_refusal).
  UringQueue(unsigned depth, const std::string& name);
  ~UringQueue();
  UringQueue(const UringQueue&) = delete;
  UringQueue& operator=(const UringQueue&) = delete;

  unsigned depth() const noexcept { return depth_; }
  // Queues a read of `length` bytes (under 4 GiB) at `offset` of descriptor `fd` into `dst`, sent
  // with the next wait(); at most depth() may be queued or in flight at once.
  void queue_read(int fd, uint64_t offset, void* dst, uint64_t length, uint64_t tag);

  struct Completion {
    uint64_t tag;
    int64_t result;  // bytes read, or -errno
  };
  // Sends what is queued and waits for one completion. Io naming `name` if the kernel refuses to wait.
  Completion wait(const std::string& name);

 private:
  std::unique_ptr<io_uring> ring_;
  unsigned depth_;
};

// 0 when this process may make io_uring rings (it makes a small one and closes it), else the errno
// the kernel answered: ENOSYS (a kernel without io_uring), EPERM (seccomp, as container runtimes'
// default profiles have it, or the io_uring_disabled sysctl), ENOMEM (the locked-memory limit).
int uring_refusal();

}  // namespace wl
