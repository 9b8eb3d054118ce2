// Where the I/O engine puts what it reads. Host memory takes reads straight into place and is
// faulted in ahead of them; a destination that is not host-addressable (device memory) gets
// every chunk's final values from host staging through deliver().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wl {

// Thread-safe: the engine's readers call it from several threads at once.
class Destination {
 public:
  virtual ~Destination() = default;
  // Whether readers may write stored bytes and converted values straight to the requests' dst
  // addresses (preadv, O_DIRECT and conversions in place). If not, every chunk is staged.
  virtual bool in_place() const = 0;
  // Once per request's whole destination [p, p + n), from one thread, before any prefault or read:
  // advice that changes the mapping (a hint: errors are ignored). Here and not in prefault(),
  // because such advice takes the address space's lock exclusively and so would stall the page
  // faults that other threads take in parallel.
  virtual void prepare(std::byte* /*p*/, uint64_t /*n*/) const {}
  // Faults [p, p + n) in before it is written (a hint: errors are ignored).
  virtual void prefault(std::byte* p, uint64_t n) const = 0;
  // Not in place: `n` bytes of final values at `values` (host staging, reusable once this returns)
  // belong at `dst`, part of `tensor` (named in errors). Throws wl::Error on failure. The delivery
  // may complete later (an asynchronous copy to a device): see drain().
  virtual void deliver(std::byte* dst, const std::byte* values, uint64_t n, std::string_view tensor) const = 0;
  // Waits until every delivery completed; throws the first one's failure (naming its tensor). The
  // engine calls it once its readers stopped, before it reports anything loaded.
  virtual void drain() const {}
};

// Ordinary process memory: in place, huge pages asked for, prefaulted with MADV_POPULATE_WRITE.
const Destination& host_memory();

}  // namespace wl
