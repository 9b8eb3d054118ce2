// Hub downloads into the standard cache layout (weightloader/hf_cache.hpp): the downloader that
// with_remote() puts in a Context.
#pragma once

#include <string>

#include "weightloader/hf_cache.hpp"

namespace wl::remote {

// Fetches what `request` selects at its revision from HF_ENDPOINT (with HF_TOKEN) into the cache
// and returns the snapshot directory. Files already in the cache are not fetched again; several
// files, and ranges of a large one (WL_HUB_PIECE_BYTES, default 64 MiB), download at once.
// request.stream: returns once the files other than weights are in; the weights arrive behind
// HfSnapshot::arriving (arriving_snapshot.hpp).
HfSnapshot download_from_hub(const HfDownload& request);

}  // namespace wl::remote
