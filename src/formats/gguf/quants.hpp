// Dequantisation of ggml's block formats into F32: the scalar reference and the Highway kernels.
#pragma once

#include <cstdint>

#include "weightloader/formats/gguf.hpp"

namespace wl::gguf {

// Scalar reference, value for value as ggml's dequantize_row_* (decoders/, one file per type, the
// table in quants.cpp). False for a type it does not decode.
bool dequantize_reference(GgmlType type, const uint8_t* blocks, uint64_t nblocks, float* out);

// The same on the best SIMD target the CPU offers (quants_hwy.cpp), bit for bit: each value is
// computed by the same float operations in the same order. False (nothing written) for a type
// without a kernel.
bool dequantize_simd(GgmlType type, const uint8_t* blocks, uint64_t nblocks, float* out);

}  // namespace wl::gguf
