// The names a checkpoint's tensors go by when the tools (convert, diff) work on them.
#pragma once

#include <memory>

#include "weightloader/context.hpp"
#include "weightloader/export.hpp"
#include "weightloader/format.hpp"
#include "weightloader/name_mapping.hpp"
#include "weightloader/source.hpp"

namespace wl {

// The format entry loaders use (builtin_formats() lists it): files recognised by is_gguf, read
// by read_gguf_catalogue, then presented by the loading layer through the "gguf" naming scheme for
// the file's general.architecture (src/loaders/gguf_hf_names.cpp): Hugging Face names
// (token_embd.weight -> model.embed_tokens.weight, ...), q/k rows in Hugging Face's rotary layout
// through TensorInfo::row_order where the architecture stores them interleaved (llama), each
// expert of a stack (blk.N.ffn_gate_exps.weight) as its own tensor
// (model.layers.N.block_sparse_moe.experts.E.w1.weight) and a Gemma's norms, stored as 1 + w,
// decoded as w; architectures the scheme does not know keep their names. Besides
// read_gguf_catalogue's errors it throws GgufHeadCount ({arch}.attention.head_count(_kv) missing,
// not a positive integer, or not splitting the rows), GgufUnsupportedTensorType (quantised rows
// that are not whole blocks cannot be reordered) and DuplicateTensorName when a presented name
// collides with another tensor's.
WL_API const FileFormat& gguf_format();

// The built-in formats, in the order detection tries them: safetensors, pytorch, the gguf entry
// above, llama2c (last: v0 has no magic, only a plausible header and an exact size). Immutable.
WL_API const FormatList& builtin_formats();
// The formats a context detects: its own list, else the built-in ones.
WL_API const FormatList& formats_of(const Context& context);
// Conveniences over builtin_formats() and local_opener().
WL_API const FileFormat* find_file_format(const std::string& name);
WL_API const FileFormat* detect_file_format(const std::string& path);

// `source` under normalised names: its names (a GGUF's already Hugging Face's, as the "gguf"
// format entry above presents them) through
// `mapping` (a loader's strip_prefix, renames, drops). The one place that decides it, so that
// automatic scheme matching can take over here. The result shares the source's opened files;
// DuplicateTensorName when two tensors end up with one name.
WL_API std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping = {});

}  // namespace wl
