// verify=sha256: one file's digest from the bytes a load reads anyway. Reader threads finish
// pieces of a file in any order; the digest needs them in file order. Each piece is handed in when
// read: hashed at once when it is next, else kept until it is (a pointer where its bytes stay put,
// in a parameter or a mapping; a copy where they are in a thread's staging, which the thread
// reuses). Whichever thread hands in the next piece hashes it and every kept piece it uncovers, so
// no thread waits on another's hashing, and copies are bounded: a thread whose copy would pass the
// bound waits for the hashing to catch up first.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "weightloader/content_digest.hpp"

namespace wl {

class OrderedDigest {
 public:
  // The sha256 of the `size` bytes of `name`; `copy_bound`: bytes kept as copies at most.
  OrderedDigest(uint64_t size, std::string name, uint64_t copy_bound);

  // Bytes [offset, offset + n) of the file, at `data`; `stable`: they stay there until the load
  // ends. Pieces may overlap (two reads of one tensor): each byte counts once.
  void add(uint64_t offset, const std::byte* data, uint64_t n, bool stable);
  // The load stopped (an error, a cancel): threads waiting to hand in a copy give up.
  void abandon();

  // Once every thread is done: bytes hashed (all of them unless the load stopped, or a mapped file
  // shrank), and then the lowercase hex digest.
  uint64_t hashed() const { return next_; }
  std::string hex() { return digest_.hex(); }

 private:
  struct Piece {
    const std::byte* data;
    uint64_t n;
    std::vector<std::byte> copy;  // the bytes, where `data` would not stay put
  };
  // Hashes pieces from next_ on while there are any; the lock is released while hashing.
  void drain(std::unique_lock<std::mutex>& lock);

  const uint64_t copy_bound_;
  ContentDigest digest_;
  std::mutex mutex_;
  std::condition_variable hashed_;
  std::multimap<uint64_t, Piece> waiting_;  // by offset
  uint64_t next_ = 0;                       // bytes hashed so far
  uint64_t copied_ = 0;                     // bytes held in copies
  bool hashing_ = false;                    // a thread is hashing
  bool abandoned_ = false;
};

}  // namespace wl
