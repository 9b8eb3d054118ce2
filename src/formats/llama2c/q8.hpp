// llama2.c v2's int8 groups: group_size int8 values share one float32 scale, value = int8 * scale.
// A tensor stores all its int8 values, then all its scales, so the decoder is a split encoding
// (see wl::Decoder::aux_block_bytes).
#pragma once

#include <cstdint>
#include <string>

#include "weightloader/source.hpp"

namespace wl::llama2c {

class Q8Decoder final : public Decoder {
 public:
  explicit Q8Decoder(uint64_t group_size) : group_size_(group_size) {}
  std::string name() const override;  // "Q8_0/g64"
  std::string spec() const override;  // {"kind":"llama2c-q8","group":64}
  uint64_t block_elems() const override { return group_size_; }
  uint64_t block_bytes() const override { return group_size_ + sizeof(float); }
  uint64_t aux_block_bytes() const override { return sizeof(float); }
  DType output_dtype() const override { return DType::F32; }
  // `src`: nblocks * group_size int8 values, then nblocks little-endian float32 scales.
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override;

 private:
  uint64_t group_size_;
};

// Quantises `n` values (a multiple of group_size) as llama2.c's export does: per group,
// scale = max |x| / 127 and q = x / scale rounded half to even (a zero group gets scale 0, q 0).
// A value that is not finite is InvalidArgument, naming `file` and `tensor`.
void quantise_q8(const float* x, uint64_t n, uint64_t group_size, int8_t* q, float* scales,
                 const std::string& file, const std::string& tensor);

}  // namespace wl::llama2c
