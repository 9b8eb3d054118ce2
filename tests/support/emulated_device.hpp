// A device for tests, behind the copy-engine seam: its own memory, at addresses the host cannot
// touch (reserved without access, so a reader writing to them directly crashes), and asynchronous
// copies run by a worker thread after an optional delay. It checks what a real device cannot
// report: that every copy's source is pinned memory it handed out, and that the source did not
// change between the copy's start and its completion. Failures can be injected.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/copy_engine.hpp"

namespace wl {

class EmulatedDevice final : public CopyEngine {
 public:
  EmulatedDevice(uint64_t device_bytes, unsigned streams = 2);
  ~EmulatedDevice() override;
  EmulatedDevice(const EmulatedDevice&) = delete;
  EmulatedDevice& operator=(const EmulatedDevice&) = delete;

  std::string name() const override { return "emulated device"; }
  unsigned streams() const override { return streams_; }
  std::byte* alloc_pinned(uint64_t bytes) override;
  void free_pinned(std::byte* p) noexcept override;
  std::byte* alloc_device(uint64_t bytes) override;  // bump allocation; Io error past device_bytes
  void free_device(std::byte* p) noexcept override;
  uint64_t copy_async(std::byte* dst, const std::byte* src, uint64_t n, unsigned stream) override;
  void wait(uint64_t ticket) override;

  // Injections: copies writing the device byte at `offset` fail; each copy takes `delay_us` first;
  // while held, no copy completes.
  void fail_copies_at(uint64_t offset);
  void set_delay_us(unsigned delay_us);
  void hold(bool held);

  // The device's memory as the host sees it: `address` to copy to, `contents` to check.
  std::byte* address(uint64_t offset) const { return base_ + offset; }
  const std::byte* contents() const { return memory_.data(); }
  uint64_t pinned_peak() const;          // pinned bytes allocated at once, at most
  unsigned in_flight_peak() const;       // copies started and not completed, at most
  uint64_t copies_done() const;          // completed, failed or not
  uint64_t bytes_copied() const;         // by copies that completed without failing
  std::vector<std::string> violations() const;  // broken rules, empty when none

 private:
  struct Copy {
    uint64_t ticket;
    std::byte* dst;
    const std::byte* src;
    uint64_t n;
    uint64_t checksum;  // of the source when the copy started
  };
  void run();

  const unsigned streams_;
  std::byte* base_;
  std::vector<std::byte> memory_;
  uint64_t device_used_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable queued_, completed_;
  std::deque<Copy> queue_;
  std::map<uint64_t, bool> done_;                 // ticket -> failed, until waited
  std::map<const std::byte*, uint64_t> pinned_;   // buffer -> bytes
  uint64_t pinned_now_ = 0, pinned_peak_ = 0, next_ticket_ = 1, copies_done_ = 0, bytes_copied_ = 0;
  unsigned in_flight_ = 0, in_flight_peak_ = 0, delay_us_ = 0;
  std::vector<uint64_t> fail_at_;
  std::vector<std::string> violations_;
  bool stopping_ = false, held_ = false;
  std::thread worker_;
};

}  // namespace wl
