// The scalar reference against independent facts (hand-written values, the CPU's own float
// conversions, nearest-value search), then the SIMD kernels against the scalar reference, bit
// for bit, on every Highway target this CPU runs.
#include "weightloader/dtype_convert.hpp"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype_convert_hwy.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define WL_TEST_F16C 1
#endif

namespace wl {
namespace {

constexpr DType kSimdFloats[] = {DType::F32, DType::BF16, DType::F16, DType::F8_E4M3, DType::F8_E5M2};

// One element of `from` (given as its bit pattern) converted by the scalar reference.
uint64_t scalar_bits(DType from, uint64_t bits, DType to) {
  uint64_t out = 0;
  convert_scalar(from, &bits, to, &out, 1);
  return out;
}

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t f64_bits(double d) { return std::bit_cast<uint64_t>(d); }

std::vector<std::byte> run_scalar(DType from, const std::vector<std::byte>& src, DType to) {
  const size_t count = src.size() / dtype_size(from);
  std::vector<std::byte> out(count * dtype_size(to));
  convert_scalar(from, src.data(), to, out.data(), count);
  return out;
}

template <typename T>
std::vector<std::byte> to_bytes(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

uint64_t element_bits(const std::byte* p, size_t size) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  return bits;
}

// Expects two conversions of `src` to agree byte for byte; names the first element that differs.
void expect_same_bits(DType from, const std::byte* src, DType to, const std::vector<std::byte>& expected,
                      const std::byte* actual, size_t count) {
  const size_t from_size = dtype_size(from);
  const size_t to_size = dtype_size(to);
  if (count == 0 || std::memcmp(expected.data(), actual, count * to_size) == 0) return;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t want = element_bits(expected.data() + i * to_size, to_size);
    const uint64_t got = element_bits(actual + i * to_size, to_size);
    if (want != got) {
      ADD_FAILURE() << dtype_name(from) << " -> " << dtype_name(to) << " element " << i << " of " << count
                    << ": source 0x" << std::hex << element_bits(src + i * from_size, from_size) << ", scalar 0x"
                    << want << ", simd 0x" << got;
      return;
    }
  }
}

// Runs `fn` once per Highway target compiled in and supported here, with dispatch forced to it.
template <typename Fn>
void for_each_simd_target(Fn&& fn) {
  struct Reset {
    ~Reset() { hwy::SetSupportedTargetsForTest(0); }
  } reset;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    fn();
  }
}

// ---------------------------------------------------------------------------------------------
// Independent reference: the nearest representable value by search over all finite values.

struct Grid {
  DType dtype;
  std::vector<long double> values;  // positive finite values by bit pattern, plus the next power of two
  uint32_t max_finite;
  uint32_t sign_bit;
  bool saturates;  // F8_E4M3: overflow gives max finite instead of Inf
};

Grid make_grid(DType dtype) {
  Grid grid;
  switch (dtype) {
    case DType::F16: grid = {dtype, {}, 0x7BFF, 0x8000, false}; break;
    case DType::BF16: grid = {dtype, {}, 0x7F7F, 0x8000, false}; break;
    case DType::F8_E4M3: grid = {dtype, {}, 0x7E, 0x80, true}; break;
    case DType::F8_E5M2: grid = {dtype, {}, 0x7B, 0x80, false}; break;
    default: ADD_FAILURE() << "no grid for " << dtype_name(dtype); return grid;
  }
  // Decoding is checked on its own against the hardware and hand-written values below.
  for (uint32_t bits = 0; bits <= grid.max_finite; ++bits) {
    grid.values.push_back(std::bit_cast<double>(scalar_bits(dtype, bits, DType::F64)));
  }
  const size_t n = grid.values.size();
  grid.values.push_back(grid.values[n - 1] + (grid.values[n - 1] - grid.values[n - 2]));
  return grid;
}

// Round-to-nearest-even of a finite x, found by comparing distances to the two neighbours.
uint32_t nearest_even(const Grid& grid, long double x) {
  const uint32_t sign = std::signbit(x) ? grid.sign_bit : 0;
  const long double a = std::fabs(x);
  const uint32_t overflow = grid.saturates ? grid.max_finite : grid.max_finite + 1;
  const size_t lo = static_cast<size_t>(std::upper_bound(grid.values.begin(), grid.values.end(), a) -
                                        grid.values.begin()) - 1;
  if (lo > grid.max_finite) return sign | overflow;
  const long double below = a - grid.values[lo];
  const long double above = grid.values[lo + 1] - a;
  const size_t pick = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | (pick > grid.max_finite ? overflow : static_cast<uint32_t>(pick));
}

// Every rounding boundary of a format as F32 values: each midpoint between neighbours (exact in
// F32 for all four formats) and the F32 values just below and above it, both signs.
std::vector<uint32_t> boundary_f32s(const Grid& grid) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i + 1 < grid.values.size(); ++i) {
    const float mid = static_cast<float>((grid.values[i] + grid.values[i + 1]) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, std::numeric_limits<float>::infinity())}) {
      out.push_back(f32_bits(f));
      out.push_back(f32_bits(-f));
    }
  }
  return out;
}

std::vector<uint32_t> random_u32s(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> out(count);
  for (uint32_t& v : out) v = rng();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scalar reference: decoding.

TEST(ConvertScalar, DecodesKnownValues) {
  struct Case {
    DType from;
    uint32_t bits;
    double value;
  };
  const Case cases[] = {
      {DType::F16, 0x7BFF, 65504.0},
      {DType::F16, 0xFBFF, -65504.0},
      {DType::F16, 0x0001, 5.9604644775390625e-08},  // 2^-24, smallest subnormal
      {DType::F16, 0x03FF, 6.097555160522461e-05},   // largest subnormal
      {DType::F16, 0x0400, 6.103515625e-05},         // smallest normal
      {DType::F16, 0x3C00, 1.0},
      {DType::F16, 0xC000, -2.0},
      {DType::F16, 0x3555, 0.333251953125},
      {DType::F16, 0x7C00, std::numeric_limits<double>::infinity()},
      {DType::F16, 0xFC00, -std::numeric_limits<double>::infinity()},
      {DType::BF16, 0x3F80, 1.0},
      {DType::BF16, 0x0001, 9.183549615799121e-41},  // 2^-133
      {DType::BF16, 0x7F7F, 3.3895313892515355e+38},
      {DType::BF16, 0xFF80, -std::numeric_limits<double>::infinity()},
      {DType::F8_E4M3, 0x7E, 448.0},
      {DType::F8_E4M3, 0xFE, -448.0},
      {DType::F8_E4M3, 0x01, 0.001953125},  // 2^-9
      {DType::F8_E4M3, 0x07, 0.013671875},  // 7 * 2^-9, largest subnormal
      {DType::F8_E4M3, 0x08, 0.015625},     // 2^-6, smallest normal
      {DType::F8_E4M3, 0x38, 1.0},
      {DType::F8_E4M3, 0x77, 240.0},
      {DType::F8_E4M3, 0x78, 256.0},  // exponent all ones is still finite in the FN layout
      {DType::F8_E5M2, 0x7B, 57344.0},
      {DType::F8_E5M2, 0x01, 1.52587890625e-05},  // 2^-16
      {DType::F8_E5M2, 0x3C, 1.0},
      {DType::F8_E5M2, 0x7C, std::numeric_limits<double>::infinity()},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(std::bit_cast<double>(scalar_bits(c.from, c.bits, DType::F64)), c.value)
        << dtype_name(c.from) << " 0x" << std::hex << c.bits;
    EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(scalar_bits(c.from, c.bits, DType::F32))),
              static_cast<float>(c.value))
        << dtype_name(c.from) << " 0x" << std::hex << c.bits;
  }
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(bf16_bits_to_f32(0xC040), -3.0f);
  EXPECT_EQ(f32_bits(f16_bits_to_f32(0x8000)), 0x80000000u);
  EXPECT_EQ(scalar_bits(DType::F8_E4M3, 0x80, DType::F32), 0x80000000u);
}

TEST(ConvertScalar, NaNsBecomeCanonicalQuietNaNsWithTheirSign) {
  struct Case {
    DType from;
    uint64_t bits;
    DType to;
    uint64_t expected;
  };
  const Case cases[] = {
      {DType::F16, 0x7C01, DType::F32, 0x7FC00000},  // signalling F16 NaN is quieted
      {DType::F16, 0xFE00, DType::F32, 0xFFC00000},
      {DType::F16, 0x7E00, DType::F64, 0x7FF8000000000000},
      {DType::BF16, 0x7F81, DType::F32, 0x7FC00000},
      {DType::BF16, 0xFFFF, DType::F16, 0xFE00},
      {DType::F32, 0x7F800001, DType::F16, 0x7E00},
      {DType::F32, 0xFFC12345, DType::BF16, 0xFFC0},
      {DType::F32, 0x7FFFFFFF, DType::F8_E5M2, 0x7E},
      {DType::F32, 0xFFC00000, DType::F8_E4M3, 0xFF},
      {DType::F64, 0x7FF0000000000001, DType::F32, 0x7FC00000},
      {DType::F64, 0xFFF8000000000001, DType::F64, 0xFFF8000000000001},  // same dtype copies
      {DType::F32, 0x7F800001, DType::F32, 0x7F800001},
      {DType::F32, 0x7F800001, DType::F64, 0x7FF8000000000000},
      {DType::F8_E4M3, 0x7F, DType::F32, 0x7FC00000},
      {DType::F8_E4M3, 0xFF, DType::BF16, 0xFFC0},
      {DType::F8_E5M2, 0x7D, DType::F16, 0x7E00},
      {DType::F8_E5M2, 0xFF, DType::F8_E4M3, 0xFF},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(scalar_bits(c.from, c.bits, c.to), c.expected)
        << std::hex << dtype_name(c.from) << " 0x" << c.bits << " -> " << dtype_name(c.to);
  }
}

TEST(ConvertScalar, EncodesF32WithTiesToEvenOverflowAndSubnormals) {
  struct Case {
    DType to;
    uint32_t f32;
    uint32_t expected;
  };
  const Case cases[] = {
      // F16: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01.
      {DType::F16, 0x3F801000, 0x3C00},
      {DType::F16, 0x3F801001, 0x3C01},
      {DType::F16, 0x3F803000, 0x3C02},  // 1 + 3*2^-11: tie goes up to the even 0x3C02
      {DType::F16, 0x477FE000, 0x7BFF},  // 65504
      {DType::F16, 0x477FEFFF, 0x7BFF},  // just below 65520
      {DType::F16, 0x477FF000, 0x7C00},  // 65520: tie between 65504 (odd) and 65536 → Inf
      {DType::F16, 0x7F7FFFFF, 0x7C00},
      {DType::F16, 0xC77FF000, 0xFC00},
      {DType::F16, 0x33800000, 0x0001},  // 2^-24
      {DType::F16, 0x33000000, 0x0000},  // 2^-25: tie → 0
      {DType::F16, 0x33000001, 0x0001},
      {DType::F16, 0x33C00000, 0x0002},  // 3*2^-25: tie → 2
      {DType::F16, 0x387FC000, 0x03FF},  // largest subnormal
      {DType::F16, 0x387FE000, 0x0400},  // 1023.5 * 2^-24: tie → 1024, the smallest normal
      {DType::F16, 0x38800000, 0x0400},
      {DType::F16, 0x00000001, 0x0000},  // F32 subnormal
      {DType::F16, 0x80000001, 0x8000},
      {DType::F16, 0x80000000, 0x8000},
      {DType::F16, 0x7F800000, 0x7C00},
      {DType::F16, 0xFF800000, 0xFC00},
      // BF16
      {DType::BF16, 0x3F808000, 0x3F80},
      {DType::BF16, 0x3F808001, 0x3F81},
      {DType::BF16, 0x3F818000, 0x3F82},
      {DType::BF16, 0x7F7F7FFF, 0x7F7F},
      {DType::BF16, 0x7F7F8000, 0x7F80},  // tie above the largest finite (odd) → Inf
      {DType::BF16, 0x7F7FFFFF, 0x7F80},
      {DType::BF16, 0x00008000, 0x0000},  // subnormal tie → 0
      {DType::BF16, 0x00018000, 0x0002},
      {DType::BF16, 0x80008001, 0x8001},
      {DType::BF16, 0xFF800000, 0xFF80},
      // F8_E4M3 (FN): saturates, Inf → NaN
      {DType::F8_E4M3, f32_bits(448.0f), 0x7E},
      {DType::F8_E4M3, f32_bits(464.0f), 0x7E},
      {DType::F8_E4M3, f32_bits(465.0f), 0x7E},
      {DType::F8_E4M3, f32_bits(1e9f), 0x7E},
      {DType::F8_E4M3, f32_bits(-1e30f), 0xFE},
      {DType::F8_E4M3, f32_bits(std::numeric_limits<float>::max()), 0x7E},
      {DType::F8_E4M3, 0x7F800000, 0x7F},
      {DType::F8_E4M3, 0xFF800000, 0xFF},
      {DType::F8_E4M3, f32_bits(240.0f), 0x77},
      {DType::F8_E4M3, f32_bits(248.0f), 0x78},      // tie between 240 (odd) and 256
      {DType::F8_E4M3, f32_bits(1.0625f), 0x38},     // tie → 1.0
      {DType::F8_E4M3, f32_bits(1.1875f), 0x3A},     // tie → 1.25
      {DType::F8_E4M3, f32_bits(0.0009765625f), 0},  // 2^-10: tie → 0
      {DType::F8_E4M3, 0x3A800001, 0x01},            // just above 2^-10
      {DType::F8_E4M3, f32_bits(0.0029296875f), 0x02},  // 3*2^-10: tie → 2
      // F8_E5M2: like IEEE
      {DType::F8_E5M2, f32_bits(57344.0f), 0x7B},
      {DType::F8_E5M2, f32_bits(61439.0f), 0x7B},
      {DType::F8_E5M2, f32_bits(61440.0f), 0x7C},  // tie above the largest finite (odd) → Inf
      {DType::F8_E5M2, f32_bits(-1e6f), 0xFC},
      {DType::F8_E5M2, 0x7F800000, 0x7C},
      {DType::F8_E5M2, f32_bits(7.62939453125e-06f), 0},  // 2^-17: tie → 0
      {DType::F8_E5M2, f32_bits(2.288818359375e-05f), 0x02},  // 3*2^-17: tie → 2
  };
  for (const Case& c : cases) {
    EXPECT_EQ(scalar_bits(DType::F32, c.f32, c.to), c.expected)
        << std::hex << "F32 0x" << c.f32 << " -> " << dtype_name(c.to);
  }
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(1.00390625f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
}

TEST(ConvertScalar, F64RoundsOnceFromFullPrecision) {
  // 1 + 2^-11 + 2^-40 is above the F16 tie; rounding through F32 first would lose that.
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(1.0 + 0x1p-11 + 0x1p-40), DType::F16), 0x3C01u);
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(1.0 + 0x1p-24), DType::F32), 0x3F800000u);
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(1.0 + 0x1p-24 + 0x1p-50), DType::F32), 0x3F800001u);
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(1e-320), DType::F32), 0u);
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(-1e300), DType::F32), 0xFF800000u);
  EXPECT_EQ(scalar_bits(DType::F64, f64_bits(1e300), DType::F8_E4M3), 0x7Eu);

  // F64 → F32 against the CPU's own conversion, random doubles of every magnitude.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const double d = std::bit_cast<double>(rng());
    if (std::isnan(d)) continue;
    ASSERT_EQ(scalar_bits(DType::F64, f64_bits(d), DType::F32), f32_bits(static_cast<float>(d))) << d;
  }
  // F64 → the narrow formats against the nearest-value search.
  for (DType to : {DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) {
    const Grid grid = make_grid(to);
    std::uniform_int_distribution<int> exponent(-140, 130);
    for (int i = 0; i < 20000; ++i) {
      const double d = std::ldexp(std::bit_cast<double>((rng() >> 12) | 0x3FF0000000000000ull), exponent(rng)) *
                       (i % 2 ? -1 : 1);
      ASSERT_EQ(scalar_bits(DType::F64, f64_bits(d), to), nearest_even(grid, d)) << dtype_name(to) << " " << d;
    }
  }
}

#ifdef WL_TEST_F16C
__attribute__((target("f16c"))) uint16_t hardware_f32_to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hardware_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
#endif

// Compares a NaN-aware result: NaNs must be the canonical NaN with the source's sign.
bool same_or_both_nan(uint32_t got, uint32_t hardware, uint32_t canonical_nan, uint32_t sign_bit, bool is_nan) {
  if (!is_nan) return got == hardware;
  return got == (canonical_nan | (hardware & sign_bit));
}

TEST(ConvertScalar, F16MatchesTheCpuF16C) {
#ifdef WL_TEST_F16C
  unsigned eax, ebx, ecx = 0, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_F16C)) GTEST_SKIP() << "CPU lacks F16C";
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float hw = hardware_f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_TRUE(same_or_both_nan(f32_bits(f16_bits_to_f32(static_cast<uint16_t>(h))), f32_bits(hw), 0x7FC00000,
                                 0x80000000, std::isnan(hw)))
        << std::hex << h;
  }
  std::vector<uint32_t> inputs = random_u32s(1 << 20, 1);
  const std::vector<uint32_t> boundaries = boundary_f32s(make_grid(DType::F16));
  inputs.insert(inputs.end(), boundaries.begin(), boundaries.end());
  for (uint32_t bits : inputs) {
    const float f = std::bit_cast<float>(bits);
    ASSERT_TRUE(same_or_both_nan(f32_to_f16_bits(f), hardware_f32_to_f16(f), 0x7E00, 0x8000, std::isnan(f)))
        << std::hex << "F32 0x" << bits << " gave 0x" << f32_to_f16_bits(f) << ", F16C 0x" << hardware_f32_to_f16(f);
  }
#else
  GTEST_SKIP() << "not an x86 CPU";
#endif
}

TEST(ConvertScalar, Bf16DecodesAsTheUpperHalfOfF32) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const float truth = std::bit_cast<float>(b << 16);
    ASSERT_TRUE(same_or_both_nan(f32_bits(bf16_bits_to_f32(static_cast<uint16_t>(b))), b << 16, 0x7FC00000,
                                 0x80000000, std::isnan(truth)))
        << std::hex << b;
  }
}

TEST(ConvertScalar, F8DecodingFacts) {
  // E5M2 is the upper byte of an F16.
  for (uint32_t b = 0; b < 256; ++b) {
    EXPECT_EQ(scalar_bits(DType::F8_E5M2, b, DType::F32), scalar_bits(DType::F16, b << 8, DType::F32)) << b;
  }
  // E4M3: every non-NaN pattern is exact in F16, and the positive ones increase strictly.
  double previous = -1;
  for (uint32_t b = 0; b < 0x7F; ++b) {
    const uint64_t f16 = scalar_bits(DType::F8_E4M3, b, DType::F16);
    EXPECT_EQ(scalar_bits(DType::F16, f16, DType::F8_E4M3), b);
    const double value = std::bit_cast<double>(scalar_bits(DType::F8_E4M3, b, DType::F64));
    EXPECT_GT(value, previous) << b;
    EXPECT_EQ(std::bit_cast<double>(scalar_bits(DType::F8_E4M3, b | 0x80, DType::F64)), -value) << b;
    previous = value;
  }
}

// F32 → each narrow format: random bit patterns and every rounding boundary against the search.
TEST(ConvertScalar, F32EncodingMatchesNearestValueSearch) {
  const std::vector<uint32_t> random = random_u32s(1 << 20, 2);
  for (DType to : {DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) {
    const Grid grid = make_grid(to);
    std::vector<uint32_t> inputs = boundary_f32s(grid);
    // 1M random patterns for the 16-bit formats, a quarter of them for F8 (few values, few boundaries).
    const size_t random_count = dtype_size(to) == 2 ? random.size() : random.size() / 4;
    inputs.insert(inputs.end(), random.begin(), random.begin() + static_cast<ptrdiff_t>(random_count));
    for (uint32_t bits : inputs) {
      const float f = std::bit_cast<float>(bits);
      if (!std::isfinite(f)) continue;
      ASSERT_EQ(scalar_bits(DType::F32, bits, to), nearest_even(grid, f))
          << std::hex << "F32 0x" << bits << " (" << f << ") -> " << dtype_name(to);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar reference: integers.

struct IntType {
  DType dtype;
  __int128 min;
  __int128 max;
};

constexpr __int128 kU64Max = std::numeric_limits<uint64_t>::max();
const IntType kIntTypes[] = {
    {DType::U8, 0, 255},
    {DType::I8, -128, 127},
    {DType::U16, 0, 65535},
    {DType::I16, -32768, 32767},
    {DType::U32, 0, std::numeric_limits<uint32_t>::max()},
    {DType::I32, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()},
    {DType::U64, 0, kU64Max},
    {DType::I64, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()},
};

// The integer that `bits` (little-endian, as wide as the dtype) holds.
__int128 read_int(const IntType& type, uint64_t bits) {
  const int width = static_cast<int>(8 * dtype_size(type.dtype));
  if (width < 64) bits &= (uint64_t{1} << width) - 1;
  const bool negative = type.min < 0 && (bits >> (width - 1)) != 0;
  return negative ? static_cast<__int128>(bits) - (__int128{1} << width) : static_cast<__int128>(bits);
}

TEST(ConvertScalar, IntegersSaturate) {
  std::vector<__int128> values = {0, 1, -1, 2, 126, 127, 128, 129, -127, -128, -129, 255, 256, 32767, 32768, -32768,
                                  -32769, 65535, 65536, 1LL << 31, -(1LL << 31), (1LL << 31) - 1, -(1LL << 31) - 1,
                                  (1LL << 32) - 1, 1LL << 32};
  for (const IntType& t : kIntTypes) {
    values.push_back(t.min);
    values.push_back(t.max);
    values.push_back(t.max - 1);
  }
  for (const IntType& from : kIntTypes) {
    for (__int128 v : values) {
      if (v < from.min || v > from.max) continue;
      for (const IntType& to : kIntTypes) {
        const __int128 expected = std::clamp(v, to.min, to.max);
        uint64_t out = 0;
        const uint64_t in = static_cast<uint64_t>(v);
        convert(from.dtype, &in, to.dtype, &out, 1);
        EXPECT_TRUE(read_int(to, out) == expected)
            << dtype_name(from.dtype) << " " << static_cast<long double>(v) << " -> " << dtype_name(to.dtype)
            << " gave " << static_cast<long double>(read_int(to, out));
      }
    }
  }
}

TEST(ConvertScalar, FloatsToIntegersTruncateSaturateAndZeroNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  const double values[] = {0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.5, -1.5, 127.9, 128.0, -128.9, -129.0, 255.9, 256.0,
                           -32768.5, 65535.99, 65536.0, 2147483647.5, 2147483648.0, -2147483648.9, -2147483649.0,
                           4294967295.5, 4294967296.0, 0x1p53, 0x1p63, -0x1p63, 0x1p64, 1.8e19, 1e300, -1e300, inf,
                           -inf, std::nan("")};
  for (DType from : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) {
    for (double d : values) {
      // The exact value the source dtype holds (the scalar F64 → from rounding is tested above).
      const uint64_t in = scalar_bits(DType::F64, f64_bits(d), from);
      const double x = std::bit_cast<double>(scalar_bits(from, in, DType::F64));
      for (const IntType& to : kIntTypes) {
        __int128 expected = 0;
        if (!std::isnan(x)) {
          const long double t = std::trunc(static_cast<long double>(x));
          expected = t <= static_cast<long double>(to.min)   ? to.min
                     : t >= static_cast<long double>(to.max) ? to.max
                                                             : static_cast<__int128>(t);
        }
        uint64_t out = 0;
        convert(from, &in, to.dtype, &out, 1);
        EXPECT_TRUE(read_int(to, out) == expected)
            << dtype_name(from) << " " << x << " -> " << dtype_name(to.dtype) << " gave "
            << static_cast<long double>(read_int(to, out)) << ", expected " << static_cast<long double>(expected);
      }
    }
  }
}

TEST(ConvertScalar, IntegersToFloatsRoundOnce) {
  // 2^60 + 2^36 + 1 is just above an F32 tie; int64 → double → float would round it down.
  EXPECT_EQ(scalar_bits(DType::I64, (1ull << 60) + (1ull << 36) + 1, DType::F32), 0x5D800001u);
  EXPECT_EQ(scalar_bits(DType::I64, (1ull << 60) + (1ull << 36), DType::F32), 0x5D800000u);
  EXPECT_EQ(scalar_bits(DType::I64, (1ull << 53) + 1, DType::F64), f64_bits(0x1p53));
  EXPECT_EQ(scalar_bits(DType::I64, (1ull << 53) + 3, DType::F64), f64_bits(0x1p53 + 4));
  EXPECT_EQ(scalar_bits(DType::U64, ~0ull, DType::F64), f64_bits(0x1p64));
  EXPECT_EQ(scalar_bits(DType::U64, ~0ull, DType::F32), 0x5F800000u);
  EXPECT_EQ(scalar_bits(DType::U64, ~0ull, DType::F16), 0x7C00u);
  EXPECT_EQ(scalar_bits(DType::U64, ~0ull, DType::F8_E4M3), 0x7Eu);
  EXPECT_EQ(scalar_bits(DType::I64, 1ull << 63, DType::F32), 0xDF000000u);
  EXPECT_EQ(scalar_bits(DType::I32, 16777217, DType::F32), f32_bits(16777216.0f));
  EXPECT_EQ(scalar_bits(DType::I32, 16777219, DType::F32), f32_bits(16777220.0f));
  EXPECT_EQ(scalar_bits(DType::I32, 65519, DType::F16), 0x7BFFu);
  EXPECT_EQ(scalar_bits(DType::I32, 65520, DType::F16), 0x7C00u);
  EXPECT_EQ(scalar_bits(DType::I32, static_cast<uint32_t>(-70000), DType::F16), 0xFC00u);
  EXPECT_EQ(scalar_bits(DType::U8, 255, DType::F16), 0x5BF8u);
  EXPECT_EQ(scalar_bits(DType::I8, 0x80, DType::BF16), 0xC300u);

  // Random integers of every magnitude: F32/F64 against long double (exact for 64-bit
  // integers, then one hardware rounding), the narrow formats against the search.
  std::mt19937_64 rng(3);
  std::vector<Grid> grids;
  for (DType to : {DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) grids.push_back(make_grid(to));
  for (int i = 0; i < 20000; ++i) {
    const uint64_t magnitude = rng() >> (rng() % 64);
    for (DType from : {DType::U64, DType::I64}) {
      const uint64_t in = from == DType::U64 || i % 2 ? magnitude : 0 - magnitude;
      const long double v = from == DType::U64 ? static_cast<long double>(in)
                                               : static_cast<long double>(static_cast<int64_t>(in));
      ASSERT_EQ(scalar_bits(from, in, DType::F32), f32_bits(static_cast<float>(v))) << dtype_name(from) << " " << v;
      ASSERT_EQ(scalar_bits(from, in, DType::F64), f64_bits(static_cast<double>(v))) << dtype_name(from) << " " << v;
      for (const Grid& grid : grids) {
        ASSERT_EQ(scalar_bits(from, in, grid.dtype), nearest_even(grid, v))
            << dtype_name(from) << " " << v << " -> " << dtype_name(grid.dtype);
      }
    }
  }
}

TEST(ConvertScalar, BoolIsZeroOrOne) {
  for (DType to : kAllDTypes) {
    if (to == DType::BOOL) continue;  // same dtype: a plain copy
    for (uint64_t byte : {0u, 1u, 2u, 255u}) {
      const uint64_t one = scalar_bits(DType::U8, 1, to);
      EXPECT_EQ(scalar_bits(DType::BOOL, byte, to), byte == 0 ? 0 : one) << dtype_name(to) << " " << byte;
    }
  }
  const double nan = std::nan("");
  for (DType from : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) {
    for (double d : {0.0, -0.0, 1e-300, 0.5, -3.0, nan}) {
      const uint64_t in = scalar_bits(DType::F64, f64_bits(d), from);
      const bool nonzero = std::bit_cast<double>(scalar_bits(from, in, DType::F64)) != 0;  // NaN counts as true
      EXPECT_EQ(scalar_bits(from, in, DType::BOOL), nonzero ? 1u : 0u) << dtype_name(from) << " " << d;
    }
  }
  EXPECT_EQ(scalar_bits(DType::I64, static_cast<uint64_t>(-7), DType::BOOL), 1u);
  EXPECT_EQ(scalar_bits(DType::U64, 1ull << 63, DType::BOOL), 1u);
  EXPECT_EQ(scalar_bits(DType::I16, 0, DType::BOOL), 0u);
}

TEST(Convert, SameDTypeCopiesBytes) {
  const std::vector<uint32_t> src = {0x7F800001, 0xFFC12345, 0x3F800000};
  for (auto fn : {&convert, &convert_scalar}) {
    std::vector<uint32_t> dst(3);
    fn(DType::F32, src.data(), DType::F32, dst.data(), 3);
    EXPECT_EQ(dst, src);
  }
  const uint8_t flags[] = {0, 1, 7};
  uint8_t copy[3] = {};
  convert(DType::BOOL, flags, DType::BOOL, copy, 3);
  EXPECT_EQ(std::memcmp(copy, flags, 3), 0);
}

// ---------------------------------------------------------------------------------------------
// SIMD kernels against the scalar reference.

struct SimdCase {
  DType from;
  DType to;
  std::vector<std::byte> src;
  std::vector<std::byte> expected;
};

std::vector<SimdCase> simd_cases() {
  std::vector<uint16_t> all16(1 << 16);
  for (uint32_t i = 0; i < all16.size(); ++i) all16[i] = static_cast<uint16_t>(i);
  std::vector<uint8_t> all8(256);
  for (uint32_t i = 0; i < all8.size(); ++i) all8[i] = static_cast<uint8_t>(i);
  std::vector<uint32_t> f32s = random_u32s(1 << 20, 4);
  for (DType narrow : {DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2}) {
    const std::vector<uint32_t> boundaries = boundary_f32s(make_grid(narrow));
    f32s.insert(f32s.end(), boundaries.begin(), boundaries.end());
  }
  for (uint32_t special : {0x7F800000u, 0xFF800000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FC00000u, 0x00000001u, 0x80000000u}) {
    f32s.push_back(special);
  }

  std::vector<SimdCase> cases;
  for (DType from : kSimdFloats) {
    const std::vector<std::byte> src = from == DType::F32 ? to_bytes(f32s)
                                       : dtype_size(from) == 2 ? to_bytes(all16)
                                                               : to_bytes(all8);
    for (DType to : kSimdFloats) {
      if (to != from) cases.push_back({from, to, src, run_scalar(from, src, to)});
    }
  }
  return cases;
}

TEST(ConvertSimd, DispatchReachesEachTarget) {
  for_each_simd_target([] {
    ASSERT_FALSE(hwy::GetChosenTarget().IsInitialized());
    uint16_t in = 0x3C00;
    float out = 0;
    ASSERT_TRUE(detail::convert_simd(DType::F16, &in, DType::F32, &out, 1));
    EXPECT_EQ(out, 1.0f);
    // The dispatch table index Highway picks for exactly this target (EMU128 sits in the last slot).
    const int64_t target = hwy::SupportedTargets();
    EXPECT_EQ(hwy::GetChosenTarget().GetIndex(),
              hwy::Num0BitsBelowLS1Bit_Nonzero64(
                  static_cast<uint64_t>(HWY_CHOSEN_TARGET_SHIFT(target) | HWY_CHOSEN_TARGET_MASK_SCALAR)));
  });
  EXPECT_FALSE(detail::convert_simd(DType::F32, nullptr, DType::F64, nullptr, 0));
  EXPECT_FALSE(detail::convert_simd(DType::I8, nullptr, DType::F32, nullptr, 0));
  EXPECT_FALSE(detail::convert_simd(DType::F16, nullptr, DType::F16, nullptr, 0));
}

// All F16, BF16 and F8 patterns, 1M random F32 patterns and every rounding boundary.
TEST(ConvertSimd, MatchesScalarBitForBit) {
  const std::vector<SimdCase> cases = simd_cases();
  ASSERT_EQ(cases.size(), 20u);
  for_each_simd_target([&] {
    for (const SimdCase& c : cases) {
      const size_t count = c.src.size() / dtype_size(c.from);
      std::vector<std::byte> out(c.expected.size());
      ASSERT_TRUE(detail::convert_simd(c.from, c.src.data(), c.to, out.data(), count));
      expect_same_bits(c.from, c.src.data(), c.to, c.expected, out.data(), count);
    }
  });
}

// Random bytes (NaNs included) at odd lengths and odd addresses; nothing outside dst is written.
void check_lengths(DType from, DType to, size_t count, std::mt19937& rng) {
  const size_t from_size = dtype_size(from);
  const size_t to_size = dtype_size(to);
  for (size_t src_offset : {0, 1, 3}) {
    for (size_t dst_offset : {0, 1, 2}) {
      std::vector<std::byte> src(src_offset + count * from_size);
      for (std::byte& b : src) b = static_cast<std::byte>(rng());
      const std::vector<std::byte> payload(src.begin() + static_cast<ptrdiff_t>(src_offset), src.end());
      const std::vector<std::byte> expected = run_scalar(from, payload, to);
      constexpr size_t kGuard = 64;
      std::vector<std::byte> dst(dst_offset + count * to_size + kGuard, std::byte{0xA5});
      convert(from, src.data() + src_offset, to, dst.data() + dst_offset, count);
      SCOPED_TRACE(testing::Message() << "count " << count << ", offsets " << src_offset << "/" << dst_offset);
      expect_same_bits(from, payload.data(), to, expected, dst.data() + dst_offset, count);
      for (size_t i = 0; i < dst.size(); ++i) {
        if (i >= dst_offset && i < dst_offset + count * to_size) continue;
        ASSERT_EQ(dst[i], std::byte{0xA5}) << "byte " << i << " outside the output was written";
      }
    }
  }
}

TEST(ConvertSimd, OddLengthsAndUnalignedPointers) {
  std::mt19937 rng(5);
  for_each_simd_target([&] {
    for (DType from : kSimdFloats) {
      for (DType to : kSimdFloats) {
        if (from == to) continue;
        for (size_t count : {0, 1, 7, 15, 17, 33, 100}) check_lengths(from, to, count, rng);
      }
    }
  });
  const std::pair<DType, DType> hot[] = {
      {DType::F32, DType::BF16},     {DType::BF16, DType::F32}, {DType::F32, DType::F16},
      {DType::F16, DType::F32},      {DType::BF16, DType::F16}, {DType::F16, DType::BF16},
      {DType::F8_E4M3, DType::BF16}, {DType::F8_E5M2, DType::F32},
  };
  for (const auto& [from, to] : hot) {
    const size_t count = 1000003;
    const size_t from_size = dtype_size(from);
    std::vector<std::byte> src(1 + count * from_size);
    for (std::byte& b : src) b = static_cast<std::byte>(rng());
    const std::vector<std::byte> payload(src.begin() + 1, src.end());
    const std::vector<std::byte> expected = run_scalar(from, payload, to);
    std::vector<std::byte> dst(3 + count * dtype_size(to));
    convert(from, src.data() + 1, to, dst.data() + 3, count);
    expect_same_bits(from, payload.data(), to, expected, dst.data() + 3, count);
  }
}

}  // namespace
}  // namespace wl
