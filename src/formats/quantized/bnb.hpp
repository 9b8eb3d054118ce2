// bitsandbytes as transformers saves it.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

// 4-bit (NF4 / FP4): `<prefix>.weight` U8 [n / 2, 1], two codes per byte, high nibble first;
// `.absmax` F32 [blocks] (double quant: U8 codes, with `.nested_absmax` F32 per nested block,
// `.nested_quant_map` F32 [256] and the quant_state's nested_offset); `.quant_map` F32 [16];
// `.quant_state.bitsandbytes__nf4|fp4` U8, the JSON that gives the dense shape and block sizes.
// W[e] = quant_map[code_e] · absmax[e / blocksize]; double quant:
// absmax[b] = nested_quant_map[code_b] · nested_absmax[b / nested_blocksize] + nested_offset (F32).
// Reads the quant_state blob now (the dense shape is only there).
QuantLayer bnb4_layer(const RawSource& raw, const std::string& prefix, const std::string& state_name, const QuantConfig& config);

// LLM.int8: `<prefix>.weight` I8 [out, in], `.SCB` F32 [out]: W = (q · SCB[o]) · (1/127 as bitsandbytes
// writes it, 7.874015718698502e-3), as int8_vectorwise_dequant computes it.
QuantLayer bnb8_layer(const RawSource& raw, const std::string& prefix, const QuantConfig& config);

}  // namespace wl::quant
