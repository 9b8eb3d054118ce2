// compressed-tensors' dequantisation of a layer's quantized values (its _dequantize, per tensor,
// channel or group, act-order groups through weight_g_idx): W[o, i] = (q[o, i] − z[o, g]) · s[o, g]
// in F32, g = i's group — i / group_size in column order, else the position of column i among the
// columns sorted by g_idx, divided by group_size (as _process_group permutes, groups and permutes
// back). The layouts of q differ (packed words, int8, FP8, sparse); the scales are this one rule.
#pragma once

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

class GroupScales {
 public:
  // Checks `prefix`'s weight_scale ([out, groups], [out, 1] or one value), weight_zero_point
  // ([out, groups] values, or with `packed_zero_bits` > 0 packed that wide down each column as
  // pack-quantized stores them) and weight_g_idx ([in]) for an [out, in] weight stored in `values`.
  GroupScales(const WeightSource& raw, const std::string& prefix, const TensorInfo& values, uint64_t out, uint64_t in,
              const QuantConfig& c, int packed_zero_bits);
  // The tensors to read (scale, then zero point and g_idx where the layer has them) and their names.
  const std::vector<SideRead>& side() const { return side_; }
  std::vector<std::string> stored() const;
  // Takes the values of side(), in its order, from side[first] on.
  void unpack(const std::vector<TensorView>& side, size_t first);
  // Row o of the dense weight from its quantized values as floats; `q` may be `out`.
  void dequantize_row(uint64_t o, const float* q, float* out) const;

 private:
  uint64_t out_, in_, groups_, group_size_;
  int zero_bits_;
  bool has_zeros_;
  bool has_g_idx_;  // else column order
  std::vector<SideRead> side_;
  std::vector<float> scales_, zeros_;  // [out, groups]
  std::vector<uint32_t> group_;        // [in]
};

// Element `i` of a bit stream of `bits`-wide values, little-endian in 32-bit words `stride` apart.
uint32_t stream_value(const uint32_t* words, uint64_t stride, uint64_t i, int bits);

}  // namespace wl::quant
