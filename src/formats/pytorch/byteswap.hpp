// Big-endian storages (a checkpoint whose `byteorder` entry says "big"): a Decoder that swaps the
// bytes of each element on the way into the caller's buffer.
#pragma once

#include <memory>

#include "weightloader/source.hpp"

namespace wl::pytorch {

// A decoder for big-endian elements of `dtype` (one-byte types are copied as they are).
std::shared_ptr<const Decoder> big_endian_decoder(DType dtype);

}  // namespace wl::pytorch
