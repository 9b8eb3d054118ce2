#include "core/device_destination.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

DeviceDestination::DeviceDestination(CopyEngine& engine, uint64_t pinned_bytes, uint64_t buffer_bytes)
    : engine_(engine), buffer_bytes_(std::max<uint64_t>(1, std::min(buffer_bytes, pinned_bytes))) {
  const uint64_t count = std::max<uint64_t>(1, pinned_bytes / buffer_bytes_);
  slots_.resize(count);
  try {
    for (size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].buffer = engine_.alloc_pinned(buffer_bytes_);
      free_.push_back(i);
    }
  } catch (...) {
    for (Slot& s : slots_)
      if (s.buffer) engine_.free_pinned(s.buffer);
    throw;
  }
}

DeviceDestination::~DeviceDestination() {
  // Copies still in flight read from the buffers: wait for them before freeing (errors were
  // either reported by drain() or are moot because the load already failed).
  for (size_t i : in_flight_) {
    try {
      engine_.wait(slots_[i].ticket);
    } catch (...) {
    }
  }
  for (Slot& s : slots_) engine_.free_pinned(s.buffer);
}

uint64_t DeviceDestination::copies() const {
  std::lock_guard lock(mutex_);
  return copies_;
}

void DeviceDestination::complete(size_t slot) const {
  try {
    engine_.wait(slots_[slot].ticket);
  } catch (const Error& e) {
    std::lock_guard lock(mutex_);
    if (!error_) {
      Error named(e.code(), fmt::format("copy to {} failed: {}", engine_.name(), e.message()), e.file(),
                  std::string(slots_[slot].tensor));
      error_ = std::make_exception_ptr(named);
    }
  }
}

// A free buffer; when there is none, the oldest copy's, once it completed.
size_t DeviceDestination::acquire() const {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!free_.empty()) {
      const size_t s = free_.front();
      free_.pop_front();
      return s;
    }
    if (!in_flight_.empty()) {
      const size_t s = in_flight_.front();
      in_flight_.pop_front();
      lock.unlock();
      complete(s);
      return s;
    }
    freed_.wait(lock);  // every buffer is being filled by another reader
  }
}

void DeviceDestination::deliver(std::byte* dst, const std::byte* values, uint64_t n, std::string_view tensor) const {
  for (uint64_t at = 0; at < n;) {
    const size_t s = acquire();
    const uint64_t piece = std::min(buffer_bytes_, n - at);
    std::unique_lock lock(mutex_);
    if (error_) {  // a copy failed: stop feeding the device
      free_.push_back(s);
      freed_.notify_one();
      std::rethrow_exception(error_);
    }
    lock.unlock();
    Slot& slot = slots_[s];
    std::memcpy(slot.buffer, values + at, piece);
    uint64_t ticket = 0;
    try {
      ticket = engine_.copy_async(dst + at, slot.buffer, piece, static_cast<unsigned>(s % engine_.streams()));
    } catch (const Error& e) {
      lock.lock();
      free_.push_back(s);
      freed_.notify_one();
      throw Error(e.code(), fmt::format("copy to {} failed: {}", engine_.name(), e.message()), e.file(),
                  std::string(tensor));
    }
    lock.lock();
    slot.ticket = ticket;
    slot.tensor = tensor;
    in_flight_.push_back(s);
    ++copies_;
    freed_.notify_one();
    at += piece;
  }
}

void DeviceDestination::drain() const {
  std::unique_lock lock(mutex_);
  while (!in_flight_.empty()) {
    const size_t s = in_flight_.front();
    in_flight_.pop_front();
    lock.unlock();
    complete(s);
    lock.lock();
    free_.push_back(s);
  }
  if (error_) {
    const std::exception_ptr e = error_;
    error_ = nullptr;  // reported once; the ring may serve another load
    std::rethrow_exception(e);
  }
}

}  // namespace wl
