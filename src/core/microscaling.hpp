// The OCP Microscaling (MX v1.0) element types E2M1, E2M3 and E3M2 and the power-of-two scales of
// E8M0, one definition for every decoder that reads them (GGUF's MXFP4 / NVFP4 blocks, Hugging Face
// MXFP4 / NVFP4 / MXFP8 checkpoints, safetensors' F4 / F6_E2M3 / F6_E3M2 tensors); each decoder
// states which 2^n its library computes for a code.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace wl::mx {

// 2^n as a float: exact down to the subnormal 2^-149, +inf past 2^127 (as ldexp overflows).
constexpr float exp2i(int n) {
  if (n > 127) return std::numeric_limits<float>::infinity();
  if (n >= -126) return std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
  return n >= -149 ? std::bit_cast<float>(1u << (n + 149)) : 0.0f;
}

// A sign bit, `exp_bits` exponent bits (bias 2^(exp_bits-1) - 1), `man_bits` mantissa bits; no
// infinities or NaN; the negative zero code is -0.
constexpr float minifloat(uint32_t code, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t man = code & ((1u << man_bits) - 1), exp = (code >> man_bits) & ((1u << exp_bits) - 1);
  const float magnitude = exp == 0 ? static_cast<float>(man) * exp2i(1 - bias - man_bits)
                                   : static_cast<float>((1u << man_bits) | man) * exp2i(static_cast<int>(exp) - bias - man_bits);
  return (code >> (exp_bits + man_bits)) & 1 ? -magnitude : magnitude;
}

template <size_t N>
constexpr std::array<float, N> minifloat_table(int exp_bits, int man_bits) {
  std::array<float, N> t{};
  for (size_t c = 0; c < N; ++c) t[c] = minifloat(static_cast<uint32_t>(c), exp_bits, man_bits);
  return t;
}

inline constexpr std::array<float, 16> kE2m1 = minifloat_table<16>(2, 1);  // FP4: 0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, ...
inline constexpr std::array<float, 64> kE2m3 = minifloat_table<64>(2, 3);  // FP6 E2M3: bias 1, max 7.5, min 0.125
inline constexpr std::array<float, 64> kE3m2 = minifloat_table<64>(3, 2);  // FP6 E3M2: bias 3, max 28, min 0.0625

}  // namespace wl::mx
