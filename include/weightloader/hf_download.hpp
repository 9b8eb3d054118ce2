// A download from the Hugging Face hub as a Context carries it: the request, and the function
// that fetches it (the remote component's; weightloader/hf_cache.hpp resolves and fetches through it).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/source.hpp"

namespace wl {

// What to fetch from the hub into the cache.
struct HfDownload {
  std::string model_id;
  std::string revision = "main";
  std::string cache_dir;             // empty: hf_hub_cache_dir()
  std::vector<std::string> include;  // fnmatch patterns over the repository's file names; empty: what a load needs
  unsigned concurrency = 8;          // transfers in flight (files, and ranges of one large file)
  ProgressCallback progress;         // bytes downloaded of bytes to download; false cancels (Cancelled)
  // Return once the small files are in the cache, while the weights files still arrive
  // (HfSnapshot::arriving); the progress callback is then not called: the load's own reports them.
  bool stream = false;
};

// A snapshot directory. After a streamed download, `arriving` opens its weights files while they
// are still being written into the cache: a read waits for its bytes (those already there, from an
// earlier interrupted download too, are read at once), and fails with the download's error. The
// download goes on behind the reads; it finishes (each blob checked against its digest, then
// linked into the snapshot) before the last source opened through `arriving` is released, and stops
// there otherwise, keeping what it received for the next run. Names outside the download go to the
// local file system. Null when every file is in the cache already.
struct HfSnapshot {
  std::string directory;
  std::shared_ptr<const Opener> arriving;
};

// Downloads (or starts streaming, request.stream) what the request selects (the remote
// component's: Context::downloader).
using HfDownloader = std::function<HfSnapshot(const HfDownload&)>;

}  // namespace wl
