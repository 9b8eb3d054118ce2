// gpt-oss's MXFP4 experts (transformers' "mxfp4" quant_method), dense as transformers 5 dequantises
// them (integrations/mxfp4.py, convert_moe_packed_tensors).
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// `<prefix>_blocks` U8 [E, R, G, B] (two E2M1 codes a byte, low nibble first) and `<prefix>_scales`
// U8 [E, R, G] (E8M0, one per 2B values) as the F32 `<prefix>` [E, 2·G·B, R] (transposed, as
// transformers hands the experts to the model): W[e, i, r] = e2m1(code) · 2^(s - 127) in F32, with
// i = 2·B·g + 2·byte + nibble, exact as torch.ldexp is (s = 255 is no NaN: ±6 · 2^128 overflows to
// ±inf, 0.5 · 2^128 is 2^127).
QuantLayer mxfp4_layer(const RawSource& raw, const std::string& prefix);

}  // namespace wl::quant
