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

// Ordinary process memory: in place, prefaulted with MADV_POPULATE_WRITE. No huge-page advice: the
// system's own policy stands (asked for, they made whole 1 GB loads 2.2x slower here: README, "Page faults").
const Destination& host_memory();

}  // namespace wl
