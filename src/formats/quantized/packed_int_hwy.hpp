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
  bool words_share_groups = false;  // GPTQ: the inputs of every word are in one group (no act-order shuffle)
};

// Whether the 32 / bits inputs of each GPTQ word share a group, so that the vector kernel applies.
bool words_share_groups(const uint32_t* group, uint64_t in, int bits);

// GPTQ qweight [in / (32 / bits), out] → rows [o0, o1) of W [out, in], into w (row o0 first).
void decode_gptq(const uint32_t* qweight, const PackedGrid& grid, uint64_t o0, uint64_t o1, float* w);
// AWQ qweight [in, out / 8] with column 8w + j in nibble slot[j] → rows [o0, o1) of W [out, in].
void decode_awq(const uint32_t* qweight, const PackedGrid& grid, const int* slot, uint64_t o0, uint64_t o1, float* w);

}  // namespace wl::quant
