// The Hugging Face hub's HTTP API, as huggingface_hub speaks it: a revision's commit and file list
// from /api/models/{repo}/revision/{rev}, and each file's commit, ETag, size and download location
// from a HEAD of /{repo}/resolve/{rev}/{path} (large LFS files answer it with a redirect to
// another host, which never gets the token).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "remote/http_client.hpp"

namespace wl::remote {

struct HubEndpoint {
  std::string url;    // no trailing slash
  std::string token;  // sent as "Authorization: Bearer" to `url` only; may be empty
  // HF_ENDPOINT (default https://huggingface.co) and HF_TOKEN.
  static HubEndpoint from_environment();
  // The Authorization header for a request to `request_url`: only to the hub itself.
  std::vector<std::string> headers_for(const std::string& request_url) const;
};

struct HubRevision {
  std::string commit;              // 40 hex digits
  std::vector<std::string> files;  // every file in the repository at that commit (siblings[].rfilename)
};

// The commit `revision` names and its files (retried); FileNotFound for an unknown repository or
// revision, Io for an answer that is not the API's JSON.
HubRevision hub_revision(const HubEndpoint& hub, const std::string& repo, const std::string& revision);

struct HubFile {
  std::string path;          // inside the repository
  std::string commit;        // X-Repo-Commit
  std::string etag;          // X-Linked-Etag (LFS: the sha256), else ETag (the git blob id); no quotes, no W/
  uint64_t size = 0;         // X-Linked-Size, else Content-Length
  std::string download_url;  // where the bytes are: the resolve URL, or the host it redirects to
};

// A file's metadata at `commit` (HEAD, retried; relative redirects followed, an absolute one taken
// as the download location); FileNotFound if the repository has no such file.
HubFile hub_file(const HubEndpoint& hub, const std::string& repo, const std::string& commit, const std::string& path);

// The URL of `path` at `revision`: {endpoint}/{repo}/resolve/{revision}/{path}.
std::string hub_resolve_url(const HubEndpoint& hub, const std::string& repo, const std::string& revision,
                            const std::string& path);

}  // namespace wl::remote
