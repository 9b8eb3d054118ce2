// The seam between the I/O engine's device destination and a device: page-locked host memory,
// device memory and asynchronous host-to-device copies that complete in the background. CUDA is
// one implementation (src/cuda); an emulated device (tests/support/emulated_device.hpp) is the other, so
// that the pipeline around it is tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wl {

// Thread-safe: several readers start copies at once.
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // What the device is called in messages, e.g. "cuda:0".
  virtual std::string name() const = 0;
  // Copy queues that run concurrently with each other (CUDA streams).
  virtual unsigned streams() const = 0;
  // Page-locked host memory (the copies' sources) and device memory. Throw wl::Error when out of memory.
  virtual std::byte* alloc_pinned(uint64_t bytes) = 0;
  virtual void free_pinned(std::byte* p) noexcept = 0;
  virtual std::byte* alloc_device(uint64_t bytes) = 0;
  virtual void free_device(std::byte* p) noexcept = 0;
  // Starts copying `n` bytes from pinned `src` to device `dst` on `stream`; `src` must not change
  // until the copy completed. Returns a ticket for wait(). Throws wl::Error if it cannot start.
  virtual uint64_t copy_async(std::byte* dst, const std::byte* src, uint64_t n, unsigned stream) = 0;
  // Blocks until the ticket's copy completed; throws wl::Error if it failed. Each ticket is waited once.
  virtual void wait(uint64_t ticket) = 0;
};

}  // namespace wl
