#include "remote/hub_client.hpp"

#include <cstdlib>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "remote/retry.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

// scheme://host[:port] of a URL.
std::string origin_of(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  return url.substr(0, url.find('/', scheme + 3));
}

std::string escape_all(const std::string& s) {  // a revision such as refs/pr/1 is one path segment
  std::string out;
  for (char c : url_escape_path(s)) out += c == '/' ? std::string("%2F") : std::string(1, c);
  return out;
}

std::string unquoted_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

std::string header(const HttpResponse& r, const std::string& name) {
  const auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

}  // namespace

HubEndpoint HubEndpoint::from_environment() {
  HubEndpoint hub;
  const char* endpoint = std::getenv("HF_ENDPOINT");
  hub.url = endpoint && *endpoint ? endpoint : "https://huggingface.co";
  while (hub.url.ends_with("/")) hub.url.pop_back();
  if (const char* token = std::getenv("HF_TOKEN"); token && *token) hub.token = token;
  return hub;
}

std::vector<std::string> HubEndpoint::headers_for(const std::string& request_url) const {
  if (token.empty() || origin_of(request_url) != origin_of(url)) return {};
  return {"Authorization: Bearer " + token};
}

std::string hub_resolve_url(const HubEndpoint& hub, const std::string& repo, const std::string& revision,
                            const std::string& path) {
  return fmt::format("{}/{}/resolve/{}/{}", hub.url, repo, escape_all(revision), url_escape_path(path));
}

HubRevision hub_revision(const HubEndpoint& hub, const std::string& repo, const std::string& revision) {
  HttpRequest request;
  request.url = fmt::format("{}/api/models/{}/revision/{}", hub.url, repo, escape_all(revision));
  request.headers = hub.headers_for(request.url);
  const HttpResponse r = with_retries(RetryPolicy::from_environment(), [&] {
    HttpResponse response = perform(request, request.url);
    if (response.status == 404)
      throw Error(ErrorCode::FileNotFound,
                  fmt::format("the hub has no model '{}' at revision '{}' (HTTP 404; a private or gated model needs "
                              "HF_TOKEN)", repo, revision),
                  request.url);
    check_status(response, request.url);
    return response;
  });
  const nlohmann::json info = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  static const std::regex full_hash(R"(^[0-9a-f]{40}$)");
  if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() ||
      !std::regex_match(info["sha"].get<std::string>(), full_hash) || !info.contains("siblings") ||
      !info["siblings"].is_array())
    throw Error(ErrorCode::Io, "the hub's answer is not a model's JSON with a 40-hex \"sha\" and \"siblings\"", request.url);
  HubRevision out{info["sha"].get<std::string>(), {}};
  for (const nlohmann::json& sibling : info["siblings"])
    if (sibling.is_object() && sibling.contains("rfilename") && sibling["rfilename"].is_string())
      out.files.push_back(sibling["rfilename"].get<std::string>());
  return out;
}

HubFile hub_file(const HubEndpoint& hub, const std::string& repo, const std::string& commit, const std::string& path) {
  HubFile file;
  file.path = path;
  const std::string resolve = hub_resolve_url(hub, repo, commit, path);
  std::string url = resolve;
  HttpResponse r;
  for (int hops = 0;; ++hops) {
    HttpRequest request;
    request.method = "HEAD";
    request.url = url;
    request.follow_redirects = false;  // the redirect's own headers carry the LFS file's etag and size
    request.headers = hub.headers_for(url);
    request.headers.push_back("Accept-Encoding: identity");
    r = with_retries(RetryPolicy::from_environment(), [&] {
      HttpResponse response = perform(request, url);
      if (response.status < 300 || response.status >= 400) check_status(response, url);
      return response;
    });
    const std::string location = header(r, "location");
    if (r.status < 300 || r.status >= 400 || location.empty()) {
      file.download_url = url;
      break;
    }
    if (!location.starts_with("/")) {  // another host (a CDN): the bytes are there
      file.download_url = location;
      break;
    }
    if (hops >= 5) throw Error(ErrorCode::Io, "more than 5 redirects within the hub", resolve);
    url = origin_of(url) + location;  // a renamed repository: still the hub
  }
  file.commit = header(r, "x-repo-commit");
  file.etag = unquoted_etag(header(r, "x-linked-etag").empty() ? header(r, "etag") : header(r, "x-linked-etag"));
  const std::string size = header(r, "x-linked-size").empty() ? header(r, "content-length") : header(r, "x-linked-size");
  char* end = nullptr;
  file.size = std::strtoull(size.c_str(), &end, 10);
  if (file.etag.empty() || size.empty() || *end != '\0')
    throw Error(ErrorCode::Io,
                fmt::format("the hub's HEAD answer lacks an ETag or a size (X-Linked-Etag/ETag '{}', X-Linked-Size/"
                            "Content-Length '{}')", file.etag, size),
                resolve);
  if (file.etag.find('/') != std::string::npos || file.etag.starts_with("."))
    throw Error(ErrorCode::Io, fmt::format("ETag '{}' cannot name a file in the cache", file.etag), resolve);
  return file;
}

}  // namespace wl::remote
