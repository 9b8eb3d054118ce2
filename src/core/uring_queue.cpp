#include "core/uring_queue.hpp"

#include <liburing.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {

Error uring_error(const std::string& what, int err, const std::string& name) {
  return Error(ErrorCode::Io, fmt::format("{}: {}", what, std::strerror(err)), name).set_os_errno(err);
}

}  // namespace

UringQueue::UringQueue(unsigned depth, const std::string& name) : ring_(std::make_unique<io_uring>()), depth_(depth) {
  const int rc = io_uring_queue_init(depth, ring_.get(), 0);
  if (rc < 0)
    throw uring_error("io=uring: the kernel refuses an io_uring (io_uring_setup; use io=direct or io=auto)", -rc, name);
}

UringQueue::~UringQueue() { io_uring_queue_exit(ring_.get()); }

void UringQueue::queue_read(int fd, uint64_t offset, void* dst, uint64_t length, uint64_t tag) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (!sqe) {  // the submission queue is full of reads not yet sent: send them
    io_uring_submit(ring_.get());
    sqe = io_uring_get_sqe(ring_.get());
  }
  io_uring_prep_read(sqe, fd, dst, static_cast<unsigned>(length), offset);
  io_uring_sqe_set_data64(sqe, tag);
}

UringQueue::Completion UringQueue::wait(const std::string& name) {
  io_uring_cqe* cqe = nullptr;
  for (;;) {
    const int rc = io_uring_submit_and_wait(ring_.get(), 1);
    if (rc >= 0 && io_uring_peek_cqe(ring_.get(), &cqe) == 0 && cqe) break;
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) throw uring_error("io_uring_enter failed", -rc, name);
  }
  const Completion done{io_uring_cqe_get_data64(cqe), cqe->res};
  io_uring_cqe_seen(ring_.get(), cqe);
  return done;
}

int uring_refusal() {
  io_uring ring{};
  const int rc = io_uring_queue_init(2, &ring, 0);
  if (rc < 0) return -rc;
  io_uring_queue_exit(&ring);
  return 0;
}

}  // namespace wl
