// The GPTQ and AWQ dequantisation kernels (packed_int_hwy.cpp): Highway where each word's inputs
// share one group, scalar otherwise; every value is (float(q) − z) · s in F32, so all paths agree
// bit for bit.
#pragma once

#include <cstdint>

namespace wl::quant {

// What the kernels need besides the packed words: the layer's size and per-group values.
struct PackedGrid {
  uint64_t out, in;
  int bits;
  const uint32_t* group;  // [in]: the group of each input feature
  const float* zeros;     // [groups, out], F32
  const float* scales;    // [groups, out], F32
};

// GPTQ qweight [in / (32 / bits), out] → W [out, in].
void decode_gptq(const uint32_t* qweight, const PackedGrid& grid, float* w);
// AWQ qweight [in, out / 8] with column 8w + j in nibble slot[j] → W [out, in].
void decode_awq(const uint32_t* qweight, const PackedGrid& grid, const int* slot, float* w);

}  // namespace wl::quant
