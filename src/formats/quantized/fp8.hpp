// FP8 e4m3fn weights with their scales (transformers' "fp8", compressed-tensors' float-quantized).
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// `<prefix>.weight` F8_E4M3 [out, in] times `scale_name` (weight_scale_inv or weight_scale, both
// multiplied), one value per tensor ([] or [1]), per output row ([out] or [out, 1]) or per block
// ([ceil(out / rows), ceil(in / cols)] with the config's block size) or per group of the config's
// group_size inputs ([out, ceil(in / group_size)]): W = f32(q) · f32(s). U8 group scales are
// compressed-tensors' mxfp8-quantized E8M0 exponents: s = 2^(e - 127).
// `<prefix>.input_scale` (for activations) has no dense counterpart and is hidden too.
QuantLayer fp8_layer(const RawSource& raw, const std::string& prefix, const std::string& scale_name, const QuantConfig& config);

}  // namespace wl::quant
