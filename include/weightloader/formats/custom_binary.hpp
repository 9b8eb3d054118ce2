// The seed's custom binary format: a directory holding
//   meta.txt   one line per tensor, `name:d0,d1,...` (`name:` alone is a rank-0 scalar)
//   model.bin  every tensor's float32 values back to back, in meta.txt's order, little-endian,
//              row-major, no header.
// Nothing else describes the data, so the reader checks that model.bin is exactly as long as
// meta.txt promises. Blank lines in meta.txt are ignored, a line may end in "\r\n", and nothing
// else is trimmed: whitespace is part of a name, and a dim is only decimal digits.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "weightloader/format.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

// `path` is the directory, or its meta.txt or model.bin. Every tensor is F32 in model.bin.
// Throws FileNotFound, MetaLineInvalid (line number, text and the fault), DuplicateTensorName,
// ValidationOverflow and BinSizeMismatch.
WL_API Catalogue read_custom_binary_catalogue(const Opener& opener, const std::string& path);
WL_API Catalogue read_custom_binary_catalogue(const std::string& path);  // through local_opener()

// Writes `tensors` into directory `dir` (created if missing), converting each one to F32.
// Each file is replaced atomically; model.bin is committed before meta.txt. A name that is empty,
// repeated, or holds ':', '\n' or '\r' cannot be written back and is InvalidArgument.
WL_API void write_custom_binary(const std::string& dir, const std::vector<std::pair<std::string, TensorView>>& tensors);

}  // namespace wl
