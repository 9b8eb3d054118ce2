// The names a checkpoint's tensors go by when the tools (convert, diff) work on them.
#pragma once

#include <memory>

#include "weightloader/export.hpp"
#include "weightloader/name_mapping.hpp"
#include "weightloader/source.hpp"

namespace wl {

// `source` under normalised names: GGUF's Llama names as Hugging Face's (blk.0.attn_q.weight ->
// model.layers.0.self_attn.q_proj.weight; the GGUF reader already presents q/k rows in Hugging
// Face's order), then `mapping` (a loader's strip_prefix, renames, drops). The one place that
// decides it, so that automatic scheme matching can take over here. The result shares the
// source's opened files; DuplicateTensorName when two tensors end up with one name.
WL_API std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping = {});

}  // namespace wl
