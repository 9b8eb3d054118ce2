// The names a checkpoint's tensors go by when the tools (convert, diff) work on them.
#pragma once

#include <memory>

#include "weightloader/export.hpp"
#include "weightloader/name_mapping.hpp"
#include "weightloader/source.hpp"

namespace wl {

// `source` under normalised names: its names (a GGUF Llama's already Hugging Face's, as the "gguf"
// format entry presents them, defined beside this in src/loaders/normalised_names.cpp) through
// `mapping` (a loader's strip_prefix, renames, drops). The one place that decides it, so that
// automatic scheme matching can take over here. The result shares the source's opened files;
// DuplicateTensorName when two tensors end up with one name.
WL_API std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping = {});

}  // namespace wl
