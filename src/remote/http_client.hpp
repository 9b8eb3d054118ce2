// One HTTP request through libcurl, with the errors a byte source needs: retryable failures
// (connection trouble, timeouts, 5xx, 429) told apart from final ones, each naming the URL.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wl::remote {

// AWS Signature V4 for S3 (libcurl signs the request itself).
struct AwsSigning {
  std::string region, access_key, secret_key, session_token;
  std::string source;  // where the keys came from, for messages: "the environment (AWS_ACCESS_KEY_ID)"
};

// Bytes libcurl receives into per transfer before handing them on (CURLOPT_BUFFERSIZE).
constexpr uint64_t kReceiveBufferBytes = 512u << 10;

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::optional<std::pair<uint64_t, uint64_t>> range;  // bytes [first, last], inclusive
  std::string if_match;                                 // an ETag the object must still have
  std::optional<AwsSigning> aws;
  std::vector<std::string> headers;  // more request headers, "Name: value"
  // Off: a 3xx is returned as it is (its Location and headers), for a caller that decides itself
  // where to go next and what to send there.
  bool follow_redirects = true;
  // Once it is true the transfer is abandoned (within about a second, even while the server sends
  // nothing) and perform() fails.
  const std::atomic<bool>* stop = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // when no sink was given
  uint64_t received = 0;                       // body bytes received
};

// Receives body bytes; returns false to stop the transfer (the request then fails).
using BodySink = std::function<bool(const char* data, size_t n)>;

// Performs the request on this thread's connection (kept alive between requests). HTTPS peers are
// checked against the CA bundle in WL_CA_BUNDLE, else CURL_CA_BUNDLE, else SSL_CERT_FILE, else
// the system's. Transport
// failures throw a retryable wl::Error (Io) naming `name` (the URL as the user wrote it), after
// `sink` may have received part of the body (HttpResponse::received is then lost: the caller
// counts what its sink took). HTTP statuses are returned, not thrown.
HttpResponse perform(const HttpRequest& request, const std::string& name, const BodySink& sink = {});

// Throws for a status a read cannot go on with: 404 FileNotFound, 412 "the object changed",
// 401/403 access denied (final), 429 and 5xx (retryable), anything else outside 2xx (final). An S3
// error body (its XML Code) is explained in terms of the request's `signing`: which of the key id,
// secret, session token, clock or policy is the likely cause.
void check_status(const HttpResponse& response, const std::string& name,
                  const std::optional<AwsSigning>& signing = std::nullopt);

std::string url_escape_path(const std::string& path);  // each segment percent-encoded, '/' kept

}  // namespace wl::remote
