// The decoder a spec (Decoder::spec()) describes, made again on another rank.
#pragma once

#include <memory>
#include <string>

#include "weightloader/source.hpp"

namespace wl {

// A quantized layer's decoder reads its side tensors through `opener`. InvalidArgument for an
// unknown kind or parameters out of range.
std::shared_ptr<const Decoder> decoder_from_spec(const std::string& spec, const std::shared_ptr<const Opener>& opener);

}  // namespace wl
