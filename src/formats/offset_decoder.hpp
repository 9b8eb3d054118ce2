// Values stored as offset + w, read as w (F32): a GGUF Gemma's norms, which hold 1 + w where
// transformers holds w.
#pragma once

#include <memory>

#include "weightloader/source.hpp"

namespace wl {

// `inner` decodes the stored values (null: raw `stored` elements); the result is theirs minus `offset`.
std::shared_ptr<const Decoder> offset_decoder(std::shared_ptr<const Decoder> inner, DType stored, float offset);

}  // namespace wl
