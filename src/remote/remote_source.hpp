// An object behind a URL (HTTP, or S3 through its HTTP API) as a byte source: its size and ETag
// from a HEAD when opened (or from another rank that sent it), then ranged GETs pinned to that ETag
// (If-Match), each straight into the caller's buffers.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "remote/http_client.hpp"
#include "weightloader/byte_source.hpp"

namespace wl::remote {

struct RemoteTarget {
  std::string name;  // as the user wrote it: https://host/m/model.safetensors, s3://bucket/key
  std::string url;   // what is requested
  std::optional<AwsSigning> aws;
};

// The object at `target` (a HEAD, retried), its reads retried: FileNotFound on a 404.
std::shared_ptr<ByteSource> open_remote(const RemoteTarget& target);
// The object at `target` as another process found it, `size` bytes at ETag `etag`: no request;
// every read is pinned to `etag` (a changed object fails its first read), and retried.
std::shared_ptr<ByteSource> open_remote_known(const RemoteTarget& target, uint64_t size, std::string etag);
// One request's cost (ByteSource::request_cost) for remote objects: WL_HTTP_LATENCY_MS (default 20
// ms) and WL_HTTP_BANDWIDTH_MBPS (MB/s per connection, default 100), an object store's typical
// figures; gaps below latency x bandwidth (2 MB by default) are read through, not asked for apart.
RequestCost remote_request_cost();
// Whether the object exists (a HEAD, retried: anything but a 404).
bool remote_exists(const RemoteTarget& target);
// The directory holding a URL's object, with its trailing slash ("s3://b/m/x" → "s3://b/m/").
std::string url_parent(const std::string& name);

class RemoteSource final : public ByteSource {
 public:
  // From a successful HEAD's headers: Content-Length (required) and ETag.
  RemoteSource(RemoteTarget target, const HttpResponse& head);
  // Already known (another process's HEAD): its size and ETag.
  RemoteSource(RemoteTarget target, uint64_t size, std::string etag);
  const std::string& name() const noexcept override { return target_.name; }
  uint64_t size() const noexcept override { return size_; }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override;
  // One ranged GET for all the buffers (an extent of back-to-back tensors), its body spread over them.
  uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const override;
  // Network round trips are slow and parallel ones cheap: big requests, many in flight.
  uint64_t preferred_request_bytes() const override { return 32ull << 20; }
  unsigned preferred_concurrency() const override { return 8; }
  uint64_t bytes_fetched() const override { return fetched_; }
  RequestCost request_cost() const override { return cost_; }
  uint64_t memory_per_reader() const override { return kReceiveBufferBytes + head_bytes(); }
  std::string version() const override { return etag_; }

  // Small reads within the object's first head_bytes() are served from one request for all of
  // them: format detection, a header's length and the header itself (a safetensors header of a few
  // hundred tensors) then cost one round trip, not three. At most 64 KiB and 1/64 of the object, so
  // that ranks which each fetch it add little to what the server sends.
  uint64_t head_bytes() const { return std::min<uint64_t>(64u << 10, size_ / 64); }

 private:
  uint64_t fetch(uint64_t offset, const ReadBuffer* buffers, size_t count) const;  // one ranged GET

  RemoteTarget target_;
  uint64_t size_ = 0;
  std::string etag_;
  RequestCost cost_ = remote_request_cost();
  mutable std::atomic<uint64_t> fetched_{0};
  mutable std::mutex head_mutex_;
  mutable std::optional<std::string> head_;  // the object's first bytes, once a small read there has fetched them
};

}  // namespace wl::remote
