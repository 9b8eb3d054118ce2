#include "core/ordered_digest.hpp"

#include "core/sigbus_guard.hpp"

namespace wl {

OrderedDigest::OrderedDigest(uint64_t size, std::string name, uint64_t copy_bound)
    : copy_bound_(copy_bound), digest_(DigestKind::Sha256, size, std::move(name)) {}

void OrderedDigest::add(uint64_t offset, const std::byte* data, uint64_t n, bool stable) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (offset + n <= next_ || abandoned_) return;
    if (!hashing_ && offset <= next_) {
      waiting_.emplace(offset, Piece{data, n, {}});
      drain(lock);
      return;
    }
    // Not next, or another thread is hashing: kept until drain() reaches it. A copy waits while
    // copies fill the bound, unless it becomes the next piece meanwhile (then it is hashed above).
    if (stable || copied_ == 0 || copied_ + n <= copy_bound_) {
      Piece piece{data, n, {}};
      if (!stable) {
        piece.copy.assign(data, data + n);
        piece.data = piece.copy.data();
        copied_ += n;
      }
      waiting_.emplace(offset, std::move(piece));
      return;
    }
    hashed_.wait(lock);
  }
}

// Any piece starting at or before next_ continues the digest (overlaps skipped); the first one
// starting after it waits for the piece between.
void OrderedDigest::drain(std::unique_lock<std::mutex>& lock) {
  hashing_ = true;
  while (!waiting_.empty() && waiting_.begin()->first <= next_ && !abandoned_) {
    auto node = waiting_.extract(waiting_.begin());
    const uint64_t offset = node.key(), end = offset + node.mapped().n;
    if (end > next_) {
      const std::byte* from = node.mapped().data + (next_ - offset);
      const uint64_t n = end - next_;
      lock.unlock();  // other threads hand in pieces meanwhile
      // A piece may be a file mapping: a file that shrank stops the digest short (complete() false).
      const bool read = guarded([&] { digest_.update(from, n); });
      lock.lock();
      if (!read) abandoned_ = true;
      else next_ = end;
    }
    copied_ -= node.mapped().copy.size();
    hashed_.notify_all();
  }
  hashing_ = false;
  hashed_.notify_all();
}

void OrderedDigest::abandon() {
  std::lock_guard lock(mutex_);
  abandoned_ = true;
  hashed_.notify_all();
}

}  // namespace wl
