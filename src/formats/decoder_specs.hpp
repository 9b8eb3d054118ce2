// The decoder a spec (Decoder::spec()) describes, made again on another rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// A quantized layer's decoder reads its side tensors through `opener`, from `files`: the files of
// the catalogue the decoder belongs to, which its spec names by index (TensorInfo::source).
// InvalidArgument for an unknown kind, parameters out of range, or a file index `files` lacks.
std::shared_ptr<const Decoder> decoder_from_spec(const std::string& spec, const std::shared_ptr<const Opener>& opener,
                                                 const std::vector<std::string>& files);

}  // namespace wl
