#include "remote/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "remote/aws_s3_error.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

// Requests here are GETs and HEADs: the payload is always empty, and this is its sha256.
constexpr const char* kEmptyPayloadHash = "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// This thread's handle: libcurl keeps its connections alive between requests.
CURL* thread_handle() {
  struct Handle {
    CURL* curl;
    Handle() : curl(curl_easy_init()) {}
    ~Handle() { curl_easy_cleanup(curl); }
  };
  init_curl_once();
  thread_local Handle handle;
  curl_easy_reset(handle.curl);
  return handle.curl;
}

const std::string& ca_bundle() {
  static const std::string path = [] {
    for (const char* name : {"WL_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"})
      if (const char* v = std::getenv(name); v && *v) return std::string(v);
    return std::string();
  }();
  return path;
}

struct Transfer {
  CURL* curl;
  bool ranged;  // a ranged request: only a 206's body is data
  const BodySink* sink;
  HttpResponse* response;
  bool stopped = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->response->status);
  if (t->response->status >= 300 || (t->ranged && t->response->status != 206)) {
    // An error page, or a whole object sent for a range: kept (briefly) for the message, never data.
    t->response->body.append(data, std::min<size_t>(bytes, 4096 - std::min<size_t>(4096, t->response->body.size())));
    return bytes;
  }
  if (*t->sink) {
    if (!(*t->sink)(data, bytes)) {
      t->stopped = true;
      return 0;  // aborts the transfer
    }
  } else {
    t->response->body.append(data, bytes);
  }
  t->response->received += bytes;
  return bytes;
}

int on_progress(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(stop)->load() ? 1 : 0;  // non-zero aborts
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  const std::string line(data, size * n);
  if (line.starts_with("HTTP/")) response->headers.clear();  // a redirect's or 100-continue's headers
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t\r\n");
    response->headers[key] = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return size * n;
}

}  // namespace

HttpResponse perform(const HttpRequest& request, const std::string& name, const BodySink& sink) {
  CURL* curl = thread_handle();
  HttpResponse response;
  Transfer transfer{curl, request.range.has_value(), &sink, &response};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  if (const std::string& ca = ca_bundle(); !ca.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  // A read timeout: a transfer slower than 1 byte/s for 30 s is dropped (and retried).
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);
  // Big socket reads: fewer recv calls and body callbacks per byte (the default, 16 KiB, held a
  // loopback transfer to about 1.4 GB/s where curl's own 100 KiB gets 2).
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, static_cast<long>(kReceiveBufferBytes));  // CURL_MAX_READ_SIZE
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  if (request.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, request.stop ? 0L : 1L);
  if (request.stop) {
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(request.stop));
  }
  std::string range;
  if (request.range) {
    range = fmt::format("{}-{}", request.range->first, request.range->second);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  }
  curl_slist* headers = nullptr;
  if (!request.if_match.empty()) headers = curl_slist_append(headers, ("If-Match: " + request.if_match).c_str());
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  std::string sigv4, userpwd;
  if (request.aws) {
    sigv4 = "aws:amz:" + request.aws->region + ":s3";
    userpwd = request.aws->access_key + ":" + request.aws->secret_key;
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
    // S3 requires the payload's hash as a header (libcurl 7.88 hashes the payload into the signature
    // but does not send it); libcurl signs every header given here, this one included.
    headers = curl_slist_append(headers, kEmptyPayloadHash);
    if (!request.aws->session_token.empty())
      headers = curl_slist_append(headers, ("x-amz-security-token: " + request.aws->session_token).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, curl_slist_free_all);
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  if (code != CURLE_OK && !transfer.stopped) {
    Error error(ErrorCode::Io, fmt::format("{} failed: {}", request.method, curl_easy_strerror(code)), name);
    // Connection trouble and timeouts may pass; a malformed URL or an unsupported protocol will not.
    const bool retryable = code != CURLE_URL_MALFORMAT && code != CURLE_UNSUPPORTED_PROTOCOL &&
                           code != CURLE_COULDNT_RESOLVE_HOST && code != CURLE_NOT_BUILT_IN;
    throw error.set_retryable(retryable);
  }
  return response;
}


void check_status(const HttpResponse& r, const std::string& name, const std::optional<AwsSigning>& signing) {
  if (r.status >= 200 && r.status < 300) return;
  if (r.status == 404) throw Error(ErrorCode::FileNotFound, "no such object (HTTP 404)", name);
  if (r.status == 412)
    throw Error(ErrorCode::Io, "the object changed while it was being read (HTTP 412: its ETag is no longer the one "
                               "the load started with)", name);
  if (const auto s3 = parse_s3_error(r.body)) {
    Error error(ErrorCode::Io, explain_s3_error(r.status, *s3, signing), name);
    // S3's own "try again" answers come as 400 and 503 with these codes.
    throw error.set_retryable(r.status == 429 || r.status >= 500 || s3->code == "RequestTimeout" || s3->code == "SlowDown");
  }
  Error error(ErrorCode::Io,
              r.status == 401 || r.status == 403
                  ? fmt::format("access denied (HTTP {}): check the credentials", r.status)
                  : fmt::format("the server answered HTTP {}", r.status),
              name);
  throw error.set_retryable(r.status == 429 || r.status >= 500);
}

std::string url_escape_path(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace wl::remote
