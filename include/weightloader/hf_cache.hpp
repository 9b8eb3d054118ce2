// The local Hugging Face cache: model ids resolved to snapshot directories.
#pragma once

#include <string>
#include <vector>
#include "weightloader/export.hpp"

namespace wl {

// The hub cache directory: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
WL_API std::string hf_hub_cache_dir();

// True when `s` looks like a model id ("org/name" or "name") rather than a filesystem path.
WL_API bool looks_like_hf_model_id(const std::string& s);

// Resolves `org/name` at `revision` (a branch, a tag or a full 40-hex commit hash) to
// `<cache>/models--org--name/snapshots/<commit>`. FileNotFound says every place it looked.
WL_API std::string resolve_hf_snapshot(const std::string& model_id, const std::string& revision = "main");

}  // namespace wl
