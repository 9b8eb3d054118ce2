// Device memory as a destination of the I/O engine. Readers hand over final values (converted on
// the host, so F32 -> BF16 halves what crosses the bus); each piece is copied into a free buffer
// of a bounded ring of pinned host memory and sent to the device asynchronously on one of the
// copy engine's streams, while the readers go on reading. A buffer is refilled only once its copy
// completed. drain() waits for every copy: nothing counts as loaded before it returned.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/copy_engine.hpp"
#include "core/destination.hpp"

namespace wl {

class DeviceDestination final : public Destination {
 public:
  // `pinned_bytes`: the ring's size, all buffers together (at least one buffer); `buffer_bytes`:
  // the most one copy carries.
  DeviceDestination(CopyEngine& engine, uint64_t pinned_bytes, uint64_t buffer_bytes = 4ull << 20);
  ~DeviceDestination() override;
  DeviceDestination(const DeviceDestination&) = delete;
  DeviceDestination& operator=(const DeviceDestination&) = delete;

  bool in_place() const override { return false; }
  void prefault(std::byte*, uint64_t) const override {}
  void deliver(std::byte* dst, const std::byte* values, uint64_t n, std::string_view tensor) const override;
  // Called once no reader delivers any more (the engine calls it after its readers stopped).
  void drain() const override;

  uint64_t pinned_bytes() const noexcept { return buffer_bytes_ * slots_.size(); }
  uint64_t copies() const;  // started so far

 private:
  struct Slot {
    std::byte* buffer = nullptr;
    uint64_t ticket = 0;
    std::string_view tensor;  // what its copy carries, for errors (alive until drain: run_reads' requests)
  };
  size_t acquire() const;
  void complete(size_t slot) const;  // waits for the slot's copy; records its error

  CopyEngine& engine_;
  uint64_t buffer_bytes_;
  mutable std::vector<Slot> slots_;
  mutable std::mutex mutex_;
  mutable std::condition_variable freed_;
  mutable std::deque<size_t> free_, in_flight_;  // in_flight_: oldest copy first
  mutable uint64_t copies_ = 0;
  mutable std::exception_ptr error_;             // the first failed copy's
};

}  // namespace wl
