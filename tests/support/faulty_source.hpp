// A byte source that misbehaves on purpose, for tests: short reads, the N-th read failing (as a
// retryable or a final error), different bytes from some read on, delays. It wraps any source and
// offers none of its capabilities (no descriptor, no mapping), so the engine reads it with plain
// positioned reads, as it would a remote object.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "weightloader/byte_source.hpp"

namespace wl {

struct Faults {
  uint64_t max_read_bytes = 0;     // > 0: every read returns at most this many bytes
  uint64_t fail_at_read = 0;       // > 0: the N-th read (from 1) throws ErrorCode::Io
  bool fail_every_read_after = false;  // with fail_at_read: every later read fails too
  bool retryable = true;           // whether those errors are retryable
  uint64_t corrupt_from_read = 0;  // > 0: from the N-th read on, every byte returned is inverted
  std::chrono::microseconds delay{0};  // slept before every read
};

class FaultySource final : public ByteSource {
 public:
  FaultySource(std::shared_ptr<ByteSource> inner, Faults faults) : inner_(std::move(inner)), faults_(faults) {}

  const std::string& name() const noexcept override { return inner_->name(); }
  uint64_t size() const noexcept override { return inner_->size(); }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override;

  uint64_t reads() const noexcept { return reads_.load(); }  // read_some calls so far

 private:
  std::shared_ptr<ByteSource> inner_;
  Faults faults_;
  mutable std::atomic<uint64_t> reads_{0};
};

}  // namespace wl
