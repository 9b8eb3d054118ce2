#include "support/faulty_source.hpp"

#include <thread>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

uint64_t FaultySource::read_some(uint64_t offset, void* dst, uint64_t length) const {
  const uint64_t n = ++reads_;
  if (faults_.delay.count() > 0) std::this_thread::sleep_for(faults_.delay);
  const uint64_t fail = faults_.fail_at_read;
  if (fail && (n == fail || (faults_.fail_every_read_after && n > fail))) {
    Error error(ErrorCode::Io, fmt::format("injected failure of read {} ({} bytes at offset {})", n, length, offset), name());
    throw error.set_retryable(faults_.retryable);
  }
  if (faults_.max_read_bytes) length = std::min(length, faults_.max_read_bytes);
  const uint64_t got = inner_->read_some(offset, dst, length);
  if (faults_.corrupt_from_read && n >= faults_.corrupt_from_read) {
    auto* bytes = static_cast<std::byte*>(dst);
    for (uint64_t i = 0; i < got; ++i) bytes[i] = ~bytes[i];
  }
  return got;
}

}  // namespace wl
