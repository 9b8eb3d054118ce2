// GPTQ and AWQ: integers packed into int32 words with per-group scales and zero points.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// GPTQ (AutoGPTQ / GPTQModel layout): qweight I32 [in / (32 / bits), out], 32 / bits consecutive
// input rows per word, LSB first; qzeros I32 [groups, out / (32 / bits)] packed the same way along
// the outputs (v1: zero − 1, +1 on read, as AutoGPTQ's dequantisation does); scales F16 [groups, out];
// g_idx I32 [in] (absent: input i is in group i / group_size).
// W[o, i] = (q[i, o] − z[g, o]) · s[g, o] with g = g_idx[i], in F32.
QuantLayer gptq_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

// AWQ GEMM (AutoAWQ): qweight I32 [in, out / 8], 8 output columns per word in the order
// [0, 2, 4, 6, 1, 3, 5, 7] (column 8w + j in nibble [0, 4, 1, 5, 2, 6, 3, 7][j]); qzeros I32
// [groups, out / 8] packed the same way (no +1); scales F16 [groups, out]; g = i / group_size.
QuantLayer awq_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

}  // namespace wl::quant
