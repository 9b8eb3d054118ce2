#include "remote/remote_source.hpp"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "remote/retry.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

RetryPolicy RetryPolicy::from_environment() {
  RetryPolicy p;
  if (const char* v = std::getenv("WL_HTTP_RETRIES"); v && *v) p.attempts = std::max(1, std::atoi(v));
  if (const char* v = std::getenv("WL_HTTP_BACKOFF_MS"); v && *v) p.backoff = std::chrono::milliseconds(std::max(0, std::atoi(v)));
  return p;
}

namespace {

// One HEAD request: the status and headers (404 is returned, not thrown).
HttpResponse head(const RemoteTarget& target) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = target.url;
  request.aws = target.aws;
  HttpResponse r = perform(request, target.name);
  if (r.status == 400 || r.status == 403) {
    // A HEAD's refusal has no body, and the body says why (S3's error Code): the same request as a
    // one-byte GET tells it.
    request.method = "GET";
    request.range = std::make_pair(0, 0);
    check_status(perform(request, target.name), target.name, target.aws);
  }
  if (r.status != 404) check_status(r, target.name, target.aws);
  return r;
}

uint64_t total_length(const ReadBuffer* buffers, size_t count) {
  uint64_t length = 0;
  for (size_t i = 0; i < count; ++i) length += buffers[i].length;
  return length;
}

}  // namespace

std::shared_ptr<ByteSource> open_remote(const RemoteTarget& target) {
  const RetryPolicy policy = RetryPolicy::from_environment();
  const HttpResponse r = with_retries(policy, [&] { return head(target); });
  if (r.status == 404) throw Error(ErrorCode::FileNotFound, "no such object (HTTP 404)", target.name);
  return std::make_shared<RetryingSource>(std::make_shared<RemoteSource>(target, r), policy);
}

std::shared_ptr<ByteSource> open_remote_known(const RemoteTarget& target, uint64_t size, std::string etag) {
  return std::make_shared<RetryingSource>(std::make_shared<RemoteSource>(target, size, std::move(etag)),
                                          RetryPolicy::from_environment());
}

RequestCost remote_request_cost() {
  auto setting = [](const char* name, double fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(x >= 0))
      throw Error(ErrorCode::InvalidArgument, fmt::format("{}='{}' is not a number >= 0", name, v));
    return x;
  };
  return {setting("WL_HTTP_LATENCY_MS", 20) / 1e3, setting("WL_HTTP_BANDWIDTH_MBPS", 100) * 1e6};
}

bool remote_exists(const RemoteTarget& target) {
  return with_retries(RetryPolicy::from_environment(), [&] { return head(target); }).status != 404;
}

std::string url_parent(const std::string& name) {
  const std::string trimmed = name.ends_with("/") ? name.substr(0, name.size() - 1) : name;
  return trimmed.substr(0, trimmed.find_last_of('/') + 1);  // keeps the slash: still a directory
}

RemoteSource::RemoteSource(RemoteTarget target, const HttpResponse& head) : target_(std::move(target)) {
  const auto length = head.headers.find("content-length");
  if (length == head.headers.end())
    throw Error(ErrorCode::Io, "the server gives no Content-Length, so the object cannot be read by ranges", target_.name);
  char* end = nullptr;
  size_ = std::strtoull(length->second.c_str(), &end, 10);
  if (end == length->second.c_str() || *end != '\0')
    throw Error(ErrorCode::Io, fmt::format("Content-Length '{}' is not a number", length->second), target_.name);
  if (const auto etag = head.headers.find("etag"); etag != head.headers.end()) etag_ = etag->second;
}

RemoteSource::RemoteSource(RemoteTarget target, uint64_t size, std::string etag)
    : target_(std::move(target)), size_(size), etag_(std::move(etag)) {}

uint64_t RemoteSource::read_some(uint64_t offset, void* dst, uint64_t length) const {
  if (offset >= size_ || length == 0) return 0;
  length = std::min(length, size_ - offset);
  if (offset + length <= head_bytes()) {
    std::lock_guard lock(head_mutex_);
    if (!head_) {
      std::string head(head_bytes(), '\0');
      const ReadBuffer whole{head.data(), head.size()};
      head.resize(fetch(0, &whole, 1));  // a dropped connection keeps what arrived
      head_ = std::move(head);
    }
    if (offset < head_->size()) {
      const uint64_t n = std::min<uint64_t>(length, head_->size() - offset);
      std::memcpy(dst, head_->data() + offset, n);
      return n;
    }
  }
  const ReadBuffer buffer{dst, length};
  return fetch(offset, &buffer, 1);
}

uint64_t RemoteSource::read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const {
  const uint64_t length = total_length(buffers, count);
  if (offset >= size_ || length == 0) return 0;
  if (offset + length <= head_bytes()) return ByteSource::read_some_scattered(offset, buffers, count);  // the cached head
  return fetch(offset, buffers, count);
}

uint64_t RemoteSource::fetch(uint64_t offset, const ReadBuffer* buffers, size_t count) const {
  const uint64_t length = std::min(total_length(buffers, count), size_ - offset);
  HttpRequest request;
  request.url = target_.url;
  request.range = std::make_pair(offset, offset + length - 1);
  request.if_match = etag_;
  request.aws = target_.aws;
  uint64_t got = 0;
  size_t at = 0;        // the buffer being filled
  uint64_t within = 0;  // bytes of it filled
  const BodySink sink = [&](const char* data, size_t n) {
    const uint64_t take = std::min<uint64_t>(n, length - got);
    for (uint64_t done = 0; done < take;) {
      while (buffers[at].length == within) ++at, within = 0;
      const uint64_t piece = std::min(take - done, buffers[at].length - within);
      if (buffers[at].data) std::memcpy(static_cast<char*>(buffers[at].data) + within, data + done, piece);  // else a gap
      within += piece, done += piece;
    }
    got += take;
    fetched_ += take;
    return take == n;  // more than the range holds: stop, the server is not answering what was asked
  };
  HttpResponse response;
  try {
    response = perform(request, target_.name, sink);
  } catch (const Error&) {
    if (got > 0) return got;  // the connection dropped mid-body: keep what arrived, resume from there
    throw;
  }
  if (response.status == 200)
    throw Error(ErrorCode::Io, "the server ignored the byte range (HTTP 200 instead of 206): it cannot be streamed",
                target_.name);
  check_status(response, target_.name, target_.aws);
  const auto range = response.headers.find("content-range");
  if (range == response.headers.end() || !range->second.starts_with(fmt::format("bytes {}-", offset)))
    throw Error(ErrorCode::Io, fmt::format("asked for bytes from {} but the server answered Content-Range '{}'", offset,
                                           range == response.headers.end() ? "" : range->second),
                target_.name);
  if (got == 0)
    throw Error(ErrorCode::Io, fmt::format("an empty body for bytes [{}, {})", offset, offset + length), target_.name)
        .set_retryable(true);
  return got;
}

}  // namespace wl::remote
