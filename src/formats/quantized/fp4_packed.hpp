// compressed-tensors' FP4 formats (its NVFP4PackedCompressor and MXFP4PackedCompressor), dense as
// their decompress computes it: W = f32(e2m1(q)) · scale, the scale per group of `group_size` inputs.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// weight_packed U8 [out, in / 2] (two E2M1 codes a byte, low nibble first) with weight_scale
// [out, in / group_size]: nvfp4-pack-quantized's F8_E4M3 (or BF16/F16/F32) scales divided in F32 by
// weight_global_scale F32 [1]; mxfp4-pack-quantized's U8 E8M0 exponents, 2^(s - 127).
QuantLayer fp4_packed_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

}  // namespace wl::quant
