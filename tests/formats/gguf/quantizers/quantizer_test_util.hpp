// What the per-type quantiser tests share: quantising and decoding through the library's tables
// (quants.cpp), the pattern of the known blocks, and the round-trip check.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"

namespace wl::test {

inline const gguf::GgmlTypeTraits& traits_of(GgmlType type) { return *gguf::ggml_type_traits(static_cast<uint32_t>(type)); }

inline std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
  const gguf::GgmlTypeTraits& t = traits_of(type);
  std::vector<uint8_t> out(x.size() / t.block_elems * t.block_bytes);
  EXPECT_TRUE(gguf::ggml_quantize(type, x.data(), x.size(), reinterpret_cast<std::byte*>(out.data())));
  return out;
}

inline std::vector<float> decode(GgmlType type, const std::vector<uint8_t>& blocks) {
  const gguf::GgmlTypeTraits& t = traits_of(type);
  std::vector<float> out(blocks.size() / t.block_bytes * t.block_elems);
  EXPECT_TRUE(gguf::dequantize_reference(type, blocks.data(), blocks.size() / t.block_bytes, out.data()));
  return out;
}

inline std::string hex(const std::vector<uint8_t>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) s += {digits[b >> 4], digits[b & 15]};
  return s;
}

// n values ((37 j) mod 64 - 32) / 8 * 0.3, every one exact before the last product: the known
// blocks' input, which gguf-py quantised into the bytes each test holds (numpy: the same float32
// product).
inline std::vector<float> known_pattern(size_t n) {
  std::vector<float> x(n);
  for (size_t j = 0; j < n; ++j) x[j] = static_cast<float>(static_cast<int>(j * 37 % 64) - 32) / 8.0f * 0.3f;
  return x;
}

// Random normal values, each block scaled by a power of ten from 1e-4 to 1e3, with a block of zeros.
inline std::vector<float> random_blocks(size_t blocks, size_t block, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(blocks * block);
  for (size_t b = 0; b < blocks; ++b) {
    const float scale = std::pow(10.0f, static_cast<float>(b % 8) - 4.0f);
    for (size_t j = 0; j < block; ++j) x[b * block + j] = b == 1 ? 0.0f : normal(rng) * scale;
  }
  return x;
}

// Half the spacing of f16's subnormals (2^-25): the absolute error of a small scale stored as f16.
inline constexpr float kF16Subnormal = 0x1p-25f;

// Quantises random blocks, decodes them with the type's decoder and checks every value is within
// `bound(block)` of its source (the block's own bound: a fraction of its scale).
template <class Bound>
void expect_round_trip_within(GgmlType type, Bound bound) {
  const size_t block = traits_of(type).block_elems;
  const std::vector<float> x = random_blocks(24, block, 7);
  const std::vector<float> y = decode(type, quantize(type, x));
  ASSERT_EQ(y.size(), x.size());
  for (size_t b = 0; b < x.size() / block; ++b) {
    const float* xb = x.data() + b * block;
    float amax = 0;
    for (size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float limit = bound(amax);
    for (size_t j = 0; j < block; ++j)
      ASSERT_LE(std::fabs(y[b * block + j] - xb[j]), limit) << "block " << b << " element " << j << " of " << x[b * block + j];
    if (amax == 0) {
      for (size_t j = 0; j < block; ++j) EXPECT_EQ(y[b * block + j], 0.0f);
    }
  }
}

}  // namespace wl::test
