// The Hugging Face cache: model ids resolved to snapshot directories, and (given a downloader:
// with_remote() puts the hub's in a Context) fetched from the hub when missing.
//
// Layout (huggingface_hub's, so either tool reuses the other's downloads):
//   <cache>/models--org--name/blobs/<etag>                 file contents, named by sha256 (LFS) or git sha1
//   <cache>/models--org--name/snapshots/<commit>/<path>    relative symlinks into blobs
//   <cache>/models--org--name/refs/<revision>              the commit a branch or tag pointed at
//   <cache>/.locks/models--org--name/<etag>.lock           held (flock) while a blob is written
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weightloader/export.hpp"
#include "weightloader/hf_download.hpp"

namespace wl {

// The hub cache directory: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
WL_API std::string hf_hub_cache_dir();

// True when `s` looks like a model id ("org/name" or "name") rather than a filesystem path.
WL_API bool looks_like_hf_model_id(const std::string& s);

// "org/name" → "models--org--name" (the repository's folder in the cache); InvalidArgument for
// something that is not a model id.
WL_API std::string hf_repo_folder(const std::string& model_id);

// InvalidArgument unless `revision` is a branch, tag or commit name that is safe as a path.
WL_API void check_hf_revision(const std::string& revision);

// True when HF_HUB_OFFLINE is set to 1/true/yes/on: no request may be made.
WL_API bool hf_hub_offline();

// Resolves `org/name` at `revision` (a branch, a tag or a full 40-hex commit hash) to
// `<cache>/models--org--name/snapshots/<commit>` (cache_dir empty: hf_hub_cache_dir()).
// FileNotFound says every place it looked. Never downloads.
WL_API std::string resolve_hf_snapshot(const std::string& model_id, const std::string& revision = "main",
                                       const std::string& cache_dir = {});

// `downloader`'s snapshot, whole (request.stream is ignored); InvalidArgument if there is none (a
// context without the remote component), and FileNotFound naming what is missing when
// HF_HUB_OFFLINE forbids requests.
WL_API std::string download_hf_snapshot(HfDownload request, const HfDownloader& downloader);

// The cached snapshot of request.model_id at request.revision, else (with a downloader, when not
// offline) a download of what a load needs, streamed when request.stream asks: also when the
// cached snapshot lacks weights (another tool fetched only config.json; an interrupted download
// left some shards of an index). `include` is ignored for a snapshot already in the cache.
WL_API HfSnapshot find_or_download_hf_snapshot(const HfDownload& request, const HfDownloader& downloader);

// The files of a repository (its file list, as the hub API gives it) that a load needs:
// config.json, the tokenizer files and generation_config.json when present, and the weights of
// one format: the safetensors index, else every *.safetensors, else the PyTorch index, else the
// pytorch_model*.bin files. `index` is set to the chosen index file, whose shards are needed too.
struct HfFileChoice {
  std::vector<std::string> files;
  std::string index;
};
WL_API HfFileChoice choose_hf_files(const std::vector<std::string>& repo_files);

}  // namespace wl
