// A download from the Hugging Face hub as a Context carries it: the request, and the function
// that fetches it (the remote component's; weightloader/hf_cache.hpp resolves and fetches through it).
#pragma once

#include <functional>
#include <string>
#include <vector>

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
};

// Downloads and returns the snapshot directory (the remote component's: Context::downloader).
using HfDownloader = std::function<std::string(const HfDownload&)>;

}  // namespace wl
