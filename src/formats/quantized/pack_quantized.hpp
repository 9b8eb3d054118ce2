// compressed-tensors' integer formats: pack-quantized (its PackedQuantizationCompressor, what vLLM's
// w4a16 and w8a16 models carry: 1 to 8 bits packed densely into int32 words) and naive-quantized /
// int-quantized (its NaiveQuantizationCompressor: one int8 per value, vLLM's w8a8 int8 models).
// Both dequantise by GroupScales' rule.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// weight_packed I32 [out, ceil(in * bits / 32)]: each row one little-endian bit stream, element i at
// bit i * bits (values may straddle two words), stored as q + 2^(bits-1); weight_shape I64 [2] =
// (out, in); weight_scale, and asymmetric weight_zero_point I32 [ceil(out * bits / 32), groups]
// packed the same way down each column; actorder "group": weight_g_idx I32 [in].
QuantLayer pack_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

// weight I8 [out, in] holding q itself; weight_scale; asymmetric weight_zero_point [out, groups];
// actorder: weight_g_idx [in].
QuantLayer naive_quantized_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

}  // namespace wl::quant
