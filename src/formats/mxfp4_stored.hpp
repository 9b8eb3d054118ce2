// gpt-oss's MXFP4 experts as the checkpoint stores them, found behind the dense tensor the view
// presents in their place (kMxfp4Kind, quantized/mxfp4.cpp), so that a writer of a block format can copy the
// blocks instead of decoding them (the GGUF converter's MXFP4 experts).
#pragma once

#include <optional>

#include "weightloader/source.hpp"

namespace wl::quant {

// `<prefix>_blocks` U8 [E, R, G, 16]: a block of 32 E2M1 codes, element 2j in byte j's low
// nibble and 2j + 1 in its high one; `<prefix>_scales` U8 [E, R, G]: each block's E8M0 exponent.
// The dense tensor is [E, 32 G, R]: row r of the blocks is its column r, the blocks running along
// its dim 1 (the experts' input). Both are read through the catalogue that holds the dense tensor.
struct Mxfp4Stored {
  TensorInfo blocks, scales;
};

// The stored blocks and scales of `dense`, when it is an MXFP4 layer's dense tensor; else none.
std::optional<Mxfp4Stored> mxfp4_stored(const TensorInfo& dense);

}  // namespace wl::quant
