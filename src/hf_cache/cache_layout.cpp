// Reading the Hugging Face cache's layout (the remote component writes it: download/hub_download.cpp).
// It is a local directory of symlinks, read through the local opener as any other files are.
#include "weightloader/hf_cache.hpp"

#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "hf_cache/hf_weights_files.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

namespace wl {

namespace {

// The cache is a local directory whatever else a context opens.
const Opener& cache_files() { return *local_opener(); }

}  // namespace

std::string hf_hub_cache_dir() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return cache_files().join(h, "hub");
  const char* home = std::getenv("HOME");
  return cache_files().join(home && *home ? home : "/root", ".cache/huggingface/hub");
}

bool looks_like_hf_model_id(const std::string& s) {
  static const std::regex id(R"(^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$)");
  return std::regex_match(s, id) && s.find("..") == std::string::npos && !cache_files().exists(s);
}

std::string hf_repo_folder(const std::string& model_id) {
  if (!looks_like_hf_model_id(model_id))
    throw Error(ErrorCode::FileNotFound, "no such file or directory, and not a model id like org/name", model_id);
  std::string folder = "models--" + model_id;
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at)) folder.replace(at, 1, "--");
  return folder;
}

void check_hf_revision(const std::string& revision) {
  static const std::regex safe_revision(R"(^[A-Za-z0-9][A-Za-z0-9._/-]*$)");
  if (!std::regex_match(revision, safe_revision) || revision.find("..") != std::string::npos)
    throw Error(ErrorCode::InvalidArgument, fmt::format("invalid revision '{}'", revision));
}

bool hf_hub_offline() {
  const char* v = std::getenv("HF_HUB_OFFLINE");
  if (!v) return false;
  const std::string s = v;
  return s == "1" || s == "true" || s == "TRUE" || s == "True" || s == "yes" || s == "on" || s == "ON";
}

std::string resolve_hf_snapshot(const std::string& model_id, const std::string& revision, const std::string& cache_dir) {
  const Opener& files = cache_files();
  const std::string repo = files.join(cache_dir.empty() ? hf_hub_cache_dir() : cache_dir, hf_repo_folder(model_id));
  check_hf_revision(revision);
  std::string commit = revision;
  static const std::regex full_hash(R"(^[0-9a-f]{40}$)");
  std::vector<std::string> looked;
  if (!std::regex_match(revision, full_hash)) {
    const std::string ref = files.join(repo, "refs/" + revision);
    looked.push_back(ref);
    commit.clear();
    if (files.exists(ref) && !files.is_directory(ref)) {
      const std::shared_ptr<ByteSource> in = files.open(ref);
      const std::string text = in->read_string(0, std::min<uint64_t>(in->size(), 64));
      if (const std::string line = text.substr(0, text.find('\n')); std::regex_match(line, full_hash)) commit = line;
    }
  }
  if (!commit.empty()) {
    const std::string snapshot = files.join(repo, "snapshots/" + commit);
    looked.push_back(snapshot);
    if (files.is_directory(snapshot)) return snapshot;
  }
  throw Error(ErrorCode::FileNotFound,
              fmt::format("model '{}' at revision '{}' is not in the local Hugging Face cache; looked in {} (cache from "
                          "HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)",
                          model_id, revision, fmt::join(looked, " and ")));
}

namespace {

// The cached snapshot, or FileNotFound naming what is missing and that HF_HUB_OFFLINE kept it so.
std::string offline_snapshot(const HfDownload& request) {
  try {
    return resolve_hf_snapshot(request.model_id, request.revision, request.cache_dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::FileNotFound) throw;
    throw Error(ErrorCode::FileNotFound, e.message() + "; HF_HUB_OFFLINE is set, so nothing was downloaded");
  }
}

}  // namespace

namespace {

HfSnapshot start_download(const HfDownload& request, const HfDownloader& downloader) {
  if (hf_hub_offline()) return {offline_snapshot(request), nullptr};
  if (!downloader)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("cannot download '{}': no hub downloader here (it needs the remote component, libcurl)",
                            request.model_id));
  return downloader(request);
}

// The weights a load would read are all there: some weights file, and every shard its index lists.
// Another tool may have left only config.json (after reading a config), or an interrupted download
// only some shards.
bool holds_weights(const std::string& snapshot) {
  const Opener& files = cache_files();
  bool any = false;
  for (const std::string& name : files.list(snapshot)) {
    if (!is_hf_weights_file(base_name(name))) continue;
    any = true;
    if (!name.ends_with(".index.json")) continue;
    const std::shared_ptr<ByteSource> index = files.open(name);
    for (const std::string& shard : sharded_index_files(index->read_string(0, index->size()), name))
      if (!files.exists(files.join(snapshot, shard))) return false;
  }
  return any;
}

}  // namespace

std::string download_hf_snapshot(HfDownload request, const HfDownloader& downloader) {
  request.stream = false;
  return start_download(request, downloader).directory;
}

HfSnapshot find_or_download_hf_snapshot(const HfDownload& request, const HfDownloader& downloader) {
  try {
    const std::string snapshot = resolve_hf_snapshot(request.model_id, request.revision, request.cache_dir);
    if (holds_weights(snapshot) || hf_hub_offline() || !downloader) return {snapshot, nullptr};
  } catch (const Error& e) {
    if (e.code() != ErrorCode::FileNotFound) throw;
    if (!downloader) throw;  // nothing to download with: where it looked is the answer
  }
  return start_download(request, downloader);  // what is in the cache already is not fetched again
}

}  // namespace wl
