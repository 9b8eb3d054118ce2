// Retries with exponential backoff for retryable wl::Errors, and a byte source decorator that
// applies them to every read of any source.
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

struct RetryPolicy {
  unsigned attempts = 5;                         // in all, the first one included
  std::chrono::milliseconds backoff{200};        // before the second attempt; doubles, at most 5 s
  static RetryPolicy from_environment();         // WL_HTTP_RETRIES, WL_HTTP_BACKOFF_MS
};

// fn() until it returns or throws a final error; after the last attempt, the last error with the
// number of attempts added to its message.
template <typename Fn>
auto with_retries(const RetryPolicy& policy, Fn&& fn) -> decltype(fn()) {
  std::chrono::milliseconds wait = policy.backoff;
  for (unsigned attempt = 1;; ++attempt) {
    try {
      return fn();
    } catch (const Error& e) {
      if (!e.retryable()) throw;
      if (attempt >= policy.attempts) {
        Error last(e.code(), fmt::format("{} (gave up after {} attempts)", e.message(), attempt), e.file(), e.tensor());
        throw last.set_retryable(false);
      }
    }
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(5000));
  }
}

// Every read of `inner` retried under `policy`; a read that ends early (a dropped connection)
// returns what arrived, and the next read resumes from there.
class RetryingSource final : public ByteSource {
 public:
  RetryingSource(std::shared_ptr<ByteSource> inner, RetryPolicy policy) : inner_(std::move(inner)), policy_(policy) {}
  const std::string& name() const noexcept override { return inner_->name(); }
  uint64_t size() const noexcept override { return inner_->size(); }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override {
    return with_retries(policy_, [&] { return inner_->read_some(offset, dst, length); });
  }
  uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const override {
    return with_retries(policy_, [&] { return inner_->read_some_scattered(offset, buffers, count); });
  }
  uint64_t preferred_request_bytes() const override { return inner_->preferred_request_bytes(); }
  unsigned preferred_concurrency() const override { return inner_->preferred_concurrency(); }
  uint64_t bytes_fetched() const override { return inner_->bytes_fetched(); }
  RequestCost request_cost() const override { return inner_->request_cost(); }
  uint64_t memory_per_reader() const override { return inner_->memory_per_reader(); }
  std::string version() const override { return inner_->version(); }

 private:
  std::shared_ptr<ByteSource> inner_;
  RetryPolicy policy_;
};

}  // namespace wl::remote
