// compressed-tensors' sparse formats: a pruned weight's kept values and a bitmask of where they go.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// Under `base` — `<prefix>.weight` (compressed-tensors before its #219, January 2025) or `<prefix>`
// (since): .compressed, the kept values in row-major order; .bitmask U8 [rows, ceil(cols / 8)]: bit
// c % 8 (least significant first) of byte c / 8 set where element c of the row is kept
// (numpy.packbits, bitorder little); .shape: the dense (rows, cols). Zeros elsewhere, as
// compressed-tensors' bitmask_decompress and sparse24_bitmask_decompress fill them.
//   sparse-bitmask: .compressed is 1-D, .row_offsets I64 [rows] where each row's values start.
//   sparse-24-bitmask: .compressed is [rows, cols / 2], exactly two of every four values kept.
// Values of a quantized model (F8_E4M3 or I8, sparsity applied over quantization) are dequantized
// afterwards by `<prefix>.weight_scale` (and zero points, g_idx) as GroupScales says.
QuantLayer sparse_layer(const RawSource& raw, const std::string& prefix, const std::string& base, const QuantConfig& config);

}  // namespace wl::quant
