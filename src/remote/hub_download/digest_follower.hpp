// Hashes a file that other threads are still writing, on a thread of its own, as far as its
// written prefix reaches, and starts the kernel's writeback of every range it hashed: when the
// last byte arrives, only the tail is left to hash and to flush, instead of the whole file read
// back and synced on the critical path.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "weightloader/content_digest.hpp"

namespace wl::remote {

class DigestFollower {
 public:
  // `fd` (readable, of `path`, named in errors) will hold `size` bytes; nullopt kind: no digest,
  // writeback only.
  DigestFollower(int fd, std::string path, std::optional<DigestKind> kind, uint64_t size);
  ~DigestFollower();  // stops the thread (a cancelled or failed download)
  DigestFollower(const DigestFollower&) = delete;
  DigestFollower& operator=(const DigestFollower&) = delete;

  // The file's first `prefix` bytes are written (calls may come out of order: the largest counts).
  void advance(uint64_t prefix);
  // Waits until all `size` bytes are hashed; the lowercase hex digest ("" without a kind). Throws
  // the read failure (Io naming the file) if there was one. Once.
  std::string finish();

 private:
  void run(std::stop_token stop);

  int fd_;
  std::string path_;
  std::unique_ptr<ContentDigest> digest_;  // null: no digest wanted
  uint64_t size_;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  uint64_t prefix_ = 0, hashed_ = 0;  // under mutex_
  std::exception_ptr error_;          // under mutex_
  std::jthread thread_;               // last: starts once the rest is set up
};

}  // namespace wl::remote
