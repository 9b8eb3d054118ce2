// compressed-tensors' sparse-bitmask format: a pruned weight's non-zero values and where they go.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// <prefix>.weight.compressed: the non-zero values in row-major order (any dtype the reader knows);
// .weight.bitmask U8 [rows, ceil(cols / 8)]: bit c % 8 (least significant first) of byte c / 8 set
// where element c of the row is one of them (numpy.packbits, bitorder little); .weight.row_offsets
// I64 [rows]: where each row's values start; .weight.shape [2]: the dense (rows, cols). Zeros
// elsewhere, as compressed-tensors' bitmask_decompress fills them.
QuantLayer sparse_bitmask_layer(const RawSource& raw, const std::string& prefix);

}  // namespace wl::quant
