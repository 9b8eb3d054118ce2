#include "support/emulated_device.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {
namespace {

uint64_t checksum(const std::byte* p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint64_t i = 0; i < n; ++i) h = (h ^ static_cast<uint64_t>(p[i])) * 1099511628211ull;
  return h;
}

}  // namespace

EmulatedDevice::EmulatedDevice(uint64_t device_bytes, unsigned streams)
    : streams_(std::max(1u, streams)), memory_(device_bytes) {
  void* p = ::mmap(nullptr, std::max<uint64_t>(device_bytes, 1), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw Error(ErrorCode::Io, "cannot reserve the emulated device's address range");
  base_ = static_cast<std::byte*>(p);
  worker_ = std::thread([this] { run(); });
}

EmulatedDevice::~EmulatedDevice() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  worker_.join();
  ::munmap(base_, std::max<uint64_t>(memory_.size(), 1));
}

std::byte* EmulatedDevice::alloc_pinned(uint64_t bytes) {
  auto* p = new std::byte[bytes];
  std::lock_guard lock(mutex_);
  pinned_[p] = bytes;
  pinned_now_ += bytes;
  pinned_peak_ = std::max(pinned_peak_, pinned_now_);
  return p;
}

void EmulatedDevice::free_pinned(std::byte* p) noexcept {
  {
    std::lock_guard lock(mutex_);
    const auto it = pinned_.find(p);
    if (it == pinned_.end()) return;
    pinned_now_ -= it->second;
    pinned_.erase(it);
  }
  delete[] p;
}

std::byte* EmulatedDevice::alloc_device(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes > memory_.size() - device_used_)
    throw Error(ErrorCode::Io, fmt::format("out of memory on the emulated device: {} bytes asked, {} free", bytes,
                                           memory_.size() - device_used_));
  std::byte* p = base_ + device_used_;
  device_used_ += (bytes + 255) / 256 * 256;  // CUDA allocations are 256-byte aligned
  device_used_ = std::min<uint64_t>(device_used_, memory_.size());
  return p;
}

void EmulatedDevice::free_device(std::byte*) noexcept {}  // bump allocation: freed with the device

uint64_t EmulatedDevice::copy_async(std::byte* dst, const std::byte* src, uint64_t n, unsigned stream) {
  std::lock_guard lock(mutex_);
  if (stream >= streams_) throw Error(ErrorCode::InvalidArgument, fmt::format("no stream {} on the emulated device", stream));
  if (dst < base_ || n > memory_.size() || static_cast<uint64_t>(dst - base_) > memory_.size() - n)
    throw Error(ErrorCode::Io, "copy outside the emulated device's memory");
  const auto it = pinned_.upper_bound(src);
  if (it == pinned_.begin() || src + n > std::prev(it)->first + std::prev(it)->second)
    violations_.push_back(fmt::format("copy of {} bytes from host memory that is not pinned", n));
  for (const Copy& c : queue_)
    if (src < c.src + c.n && c.src < src + n) violations_.push_back("copy from a pinned buffer whose copy is still in flight");
  const uint64_t ticket = next_ticket_++;
  queue_.push_back(Copy{ticket, dst, src, n, checksum(src, n)});
  in_flight_peak_ = std::max(in_flight_peak_, ++in_flight_);
  queued_.notify_one();
  return ticket;
}

void EmulatedDevice::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !held_); });
    if (queue_.empty()) return;
    const Copy c = queue_.front();
    const unsigned delay = delay_us_;
    const uint64_t at = static_cast<uint64_t>(c.dst - base_);
    const bool fail = std::any_of(fail_at_.begin(), fail_at_.end(), [&](uint64_t f) { return f >= at && f < at + c.n; });
    lock.unlock();
    if (delay) std::this_thread::sleep_for(std::chrono::microseconds(delay));
    const bool changed = checksum(c.src, c.n) != c.checksum;
    if (!fail) std::memcpy(memory_.data() + at, c.src, c.n);
    lock.lock();
    if (changed) violations_.push_back("a pinned buffer changed before its copy completed");
    queue_.pop_front();
    --in_flight_;
    ++copies_done_;
    if (!fail) bytes_copied_ += c.n;
    done_[c.ticket] = fail;
    completed_.notify_all();
  }
}

void EmulatedDevice::wait(uint64_t ticket) {
  std::unique_lock lock(mutex_);
  completed_.wait(lock, [&] { return done_.count(ticket) > 0; });
  const bool failed = done_[ticket];
  done_.erase(ticket);
  if (failed) throw Error(ErrorCode::Io, "injected copy failure");
}

void EmulatedDevice::fail_copies_at(uint64_t offset) {
  std::lock_guard lock(mutex_);
  fail_at_.push_back(offset);
}

void EmulatedDevice::hold(bool held) {
  {
    std::lock_guard lock(mutex_);
    held_ = held;
  }
  queued_.notify_all();
}

void EmulatedDevice::set_delay_us(unsigned delay_us) {
  std::lock_guard lock(mutex_);
  delay_us_ = delay_us;
}

uint64_t EmulatedDevice::pinned_peak() const {
  std::lock_guard lock(mutex_);
  return pinned_peak_;
}

unsigned EmulatedDevice::in_flight_peak() const {
  std::lock_guard lock(mutex_);
  return in_flight_peak_;
}

uint64_t EmulatedDevice::copies_done() const {
  std::lock_guard lock(mutex_);
  return copies_done_;
}

uint64_t EmulatedDevice::bytes_copied() const {
  std::lock_guard lock(mutex_);
  return bytes_copied_;
}

std::vector<std::string> EmulatedDevice::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

}  // namespace wl
