// compressed-tensors' pack-quantized format (its PackedQuantizationCompressor, what vLLM's w4a16 and
// w8a16 models carry): integer weights of 1 to 8 bits packed densely into int32 words.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// weight_packed I32 [out, ceil(in * bits / 32)]: each row one little-endian bit stream, element i at
// bit i * bits (values may straddle two words), stored as q + 2^(bits-1); weight_shape I64 [2] =
// (out, in); weight_scale [out, groups] (group), [out, 1] (channel) or one value (tensor);
// asymmetric: weight_zero_point I32 [ceil(out * bits / 32), groups], packed the same way down each
// column; actorder "group": weight_g_idx I32 [in].
// W[o, i] = (q[o, i] − z[o, g]) · s[o, g] in F32, g = i's group: i / group_size in column order, else
// the position of column i among the columns sorted by g_idx, divided by group_size (as
// compressed-tensors' _process_group permutes, groups and permutes back).
QuantLayer pack_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

}  // namespace wl::quant
