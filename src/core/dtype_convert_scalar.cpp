// The scalar reference conversion: exact, one element at a time, any pair of dtypes.
//
// Every float format is decoded to double exactly, then encoded to the target with one
// round-to-nearest-even step; since every source value is exact in double, that single rounding
// is the correctly rounded result. Integers travel as int64/uint64. NaN outputs are canonical:
// the sign is kept, the payload is the quiet bit alone (F8_E4M3, which has one NaN per sign,
// uses S.1111.111). The SIMD kernels in convert_hwy.cpp produce exactly the same bits. F8_E8M0 is
// the exception: it is encoded as torch encodes it (encode_e8m0), which is not round-to-nearest-even.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

#include "weightloader/dtype_convert.hpp"

namespace wl {

namespace {

// A binary float format narrower than double: exponent and mantissa widths; `fn` marks the
// F8_E4M3 "FN" layout (no infinities, only S.1111.111 is NaN, overflow saturates).
struct FloatFormat {
  int exp_bits;
  int mant_bits;
  bool fn;
};

constexpr FloatFormat kF16{5, 10, false};
constexpr FloatFormat kBF16{8, 7, false};
constexpr FloatFormat kF32{8, 23, false};
constexpr FloatFormat kE4M3{4, 3, true};
constexpr FloatFormat kE5M2{5, 2, false};

double signed_nan(bool negative) {
  return std::copysign(std::numeric_limits<double>::quiet_NaN(), negative ? -1.0 : 1.0);
}

double decode(uint32_t bits, FloatFormat f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const uint32_t mant_all = (1u << f.mant_bits) - 1;
  const bool negative = (bits >> (f.exp_bits + f.mant_bits)) & 1;
  const uint32_t exp = (bits >> f.mant_bits) & exp_all;
  const uint32_t mant = bits & mant_all;
  double magnitude;
  if (f.fn && exp == exp_all && mant == mant_all) return signed_nan(negative);
  if (!f.fn && exp == exp_all) {
    if (mant != 0) return signed_nan(negative);
    magnitude = std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    magnitude = std::ldexp(static_cast<double>(mant), 1 - bias - f.mant_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mant | (mant_all + 1)), static_cast<int>(exp) - bias - f.mant_bits);
  }
  return negative ? -magnitude : magnitude;
}

uint32_t encode(double value, FloatFormat f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint64_t exp_all = (1u << f.exp_bits) - 1;
  const uint64_t sign = std::signbit(value) ? uint64_t{1} << (f.exp_bits + f.mant_bits) : 0;
  const uint64_t nan = f.fn ? (exp_all << f.mant_bits) | ((1u << f.mant_bits) - 1)
                            : (exp_all << f.mant_bits) | (1u << (f.mant_bits - 1));
  const uint64_t max_finite = f.fn ? nan - 1 : (exp_all << f.mant_bits) - 1;
  const uint64_t overflow = f.fn ? max_finite : exp_all << f.mant_bits;  // saturate or ±Inf
  if (std::isnan(value)) return static_cast<uint32_t>(sign | nan);
  if (std::isinf(value)) return static_cast<uint32_t>(sign | (f.fn ? nan : overflow));
  if (value == 0) return static_cast<uint32_t>(sign);

  // |value| = significand * 2^(e - 53) with a 53-bit integer significand, so the value's leading
  // bit has exponent e - 1. (Double subnormals have fewer bits, but lie so far below every
  // target's smallest subnormal that they round to zero anyway.)
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const int biased_exp = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint64_t significand = biased_exp == 0 ? fraction : fraction | (uint64_t{1} << 52);
  const int e = biased_exp == 0 ? -1021 : biased_exp - 1022;
  const int emin = 1 - bias;
  // Normal targets keep mant_bits + 1 bits; below emin the spacing is fixed at 2^(emin - mant_bits).
  const int shift = std::max(e - 1, emin) - f.mant_bits - (e - 53);
  uint64_t rounded = 0;
  if (shift < 64) {
    const uint64_t kept = significand >> shift;
    const uint64_t rest = significand - (kept << shift);
    const uint64_t half = uint64_t{1} << (shift - 1);
    rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
  }
  // A rounded significand that reaches the next power of two carries into the exponent by itself.
  const uint64_t magnitude_bits =
      e - 1 >= emin ? (static_cast<uint64_t>(e - 1 - emin) << f.mant_bits) + rounded : rounded;
  return static_cast<uint32_t>(sign | (magnitude_bits > max_finite ? overflow : magnitude_bits));
}

uint64_t encode_f64(double value) {
  if (std::isnan(value)) return (std::signbit(value) ? uint64_t{1} << 63 : 0) | 0x7FF8000000000000ull;
  return std::bit_cast<uint64_t>(value);
}

// The magnitude as a double rounded to odd at 53 bits: exact below 2^53, and above it a later
// round-to-nearest-even to 24 bits or fewer sees the same result as from the exact integer.
double round_to_odd_double(uint64_t magnitude) {
  const int bits = 64 - std::countl_zero(magnitude);
  if (bits <= 53) return static_cast<double>(magnitude);
  const int drop = bits - 53;
  uint64_t kept = magnitude >> drop;
  if ((magnitude & ((uint64_t{1} << drop) - 1)) != 0) kept |= 1;
  return std::ldexp(static_cast<double>(kept), drop);
}

// One element in flight: an integer (signed or unsigned) or a float held exactly in a double.
struct Value {
  enum class Kind { Signed, Unsigned, Float } kind;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};

// F8_E8M0 (torch's float8_e8m0fnu): 2^(e - 127); 0xFF is NaN.
double decode_e8m0(uint8_t e) { return e == 0xFF ? signed_nan(false) : std::ldexp(1.0, static_cast<int>(e) - 127); }

// As torch encodes it, from the value as F32: its exponent, one up when the mantissa is above half,
// or at half above the subnormals; NaN, infinities and overflow give 0xFF; the sign is dropped.
uint8_t encode_e8m0(double value) {
  const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(value));
  const uint32_t exp = (bits >> 23) & 0xFF, mant = bits & 0x7FFFFF;
  if (exp == 0xFF) return 0xFF;
  const uint32_t up = mant > 0x400000 || (mant == 0x400000 && exp != 0) ? 1 : 0;
  return static_cast<uint8_t>(std::min<uint32_t>(exp + up, 0xFF));
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <DType D>
Value read(const std::byte* p) {
  if constexpr (D == DType::BOOL) return Value{Value::Kind::Unsigned, 0, load<uint8_t>(p) != 0 ? 1u : 0u};
  else if constexpr (D == DType::U8) return Value{Value::Kind::Unsigned, 0, load<uint8_t>(p)};
  else if constexpr (D == DType::U16) return Value{Value::Kind::Unsigned, 0, load<uint16_t>(p)};
  else if constexpr (D == DType::U32) return Value{Value::Kind::Unsigned, 0, load<uint32_t>(p)};
  else if constexpr (D == DType::U64) return Value{Value::Kind::Unsigned, 0, load<uint64_t>(p)};
  else if constexpr (D == DType::I8) return Value{Value::Kind::Signed, load<int8_t>(p)};
  else if constexpr (D == DType::I16) return Value{Value::Kind::Signed, load<int16_t>(p)};
  else if constexpr (D == DType::I32) return Value{Value::Kind::Signed, load<int32_t>(p)};
  else if constexpr (D == DType::I64) return Value{Value::Kind::Signed, load<int64_t>(p)};
  else if constexpr (D == DType::F16) return Value{Value::Kind::Float, 0, 0, decode(load<uint16_t>(p), kF16)};
  else if constexpr (D == DType::BF16) return Value{Value::Kind::Float, 0, 0, decode(load<uint16_t>(p), kBF16)};
  else if constexpr (D == DType::F32) return Value{Value::Kind::Float, 0, 0, decode(load<uint32_t>(p), kF32)};
  else if constexpr (D == DType::F64) return Value{Value::Kind::Float, 0, 0, load<double>(p)};
  else if constexpr (D == DType::F8_E4M3) return Value{Value::Kind::Float, 0, 0, decode(load<uint8_t>(p), kE4M3)};
  else if constexpr (D == DType::F8_E8M0) return Value{Value::Kind::Float, 0, 0, decode_e8m0(load<uint8_t>(p))};
  else return Value{Value::Kind::Float, 0, 0, decode(load<uint8_t>(p), kE5M2)};
}

// Float → integer: truncate toward zero, saturate, NaN → 0.
template <typename T>
T float_to_int(double f) {
  if (std::isnan(f)) return 0;
  // 2^digits is one past the maximum; the minimum (0 or -2^digits) is exact in double.
  const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (f >= limit) return std::numeric_limits<T>::max();
  if (f <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  return static_cast<T>(f);
}

template <typename T>
T saturate(const Value& v) {
  if (v.kind == Value::Kind::Float) return float_to_int<T>(v.f);
  if (v.kind == Value::Kind::Unsigned) {
    return v.u > static_cast<uint64_t>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max()
                                                                       : static_cast<T>(v.u);
  }
  if constexpr (std::is_unsigned_v<T>) {
    if (v.i < 0) return 0;
    return static_cast<uint64_t>(v.i) > static_cast<uint64_t>(std::numeric_limits<T>::max())
               ? std::numeric_limits<T>::max()
               : static_cast<T>(v.i);
  } else {
    if (v.i < std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
    if (v.i > std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return static_cast<T>(v.i);
  }
}

// The value as a double that a narrower float format can round from (see round_to_odd_double).
double as_double(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Float: return v.f;
    case Value::Kind::Unsigned: return round_to_odd_double(v.u);
    case Value::Kind::Signed: {
      const uint64_t magnitude = v.i < 0 ? 0 - static_cast<uint64_t>(v.i) : static_cast<uint64_t>(v.i);
      const double d = round_to_odd_double(magnitude);
      return v.i < 0 ? -d : d;
    }
  }
  return 0;
}

template <DType D>
void write(std::byte* p, const Value& v) {
  if constexpr (D == DType::BOOL) {
    const bool nonzero = v.kind == Value::Kind::Float ? v.f != 0 : (v.i != 0 || v.u != 0);  // NaN != 0
    store<uint8_t>(p, nonzero ? 1 : 0);
  }
  if constexpr (D == DType::U8) store(p, saturate<uint8_t>(v));
  if constexpr (D == DType::U16) store(p, saturate<uint16_t>(v));
  if constexpr (D == DType::U32) store(p, saturate<uint32_t>(v));
  if constexpr (D == DType::U64) store(p, saturate<uint64_t>(v));
  if constexpr (D == DType::I8) store(p, saturate<int8_t>(v));
  if constexpr (D == DType::I16) store(p, saturate<int16_t>(v));
  if constexpr (D == DType::I32) store(p, saturate<int32_t>(v));
  if constexpr (D == DType::I64) store(p, saturate<int64_t>(v));
  if constexpr (D == DType::F16) store(p, static_cast<uint16_t>(encode(as_double(v), kF16)));
  if constexpr (D == DType::BF16) store(p, static_cast<uint16_t>(encode(as_double(v), kBF16)));
  if constexpr (D == DType::F32) store(p, encode(as_double(v), kF32));
  if constexpr (D == DType::F64) {
    // Integers round to nearest even directly: int64 → double is a single correct rounding.
    const double d = v.kind == Value::Kind::Float      ? v.f
                     : v.kind == Value::Kind::Unsigned ? static_cast<double>(v.u)
                                                       : static_cast<double>(v.i);
    store(p, encode_f64(d));
  }
  if constexpr (D == DType::F8_E4M3) store(p, static_cast<uint8_t>(encode(as_double(v), kE4M3)));
  if constexpr (D == DType::F8_E5M2) store(p, static_cast<uint8_t>(encode(as_double(v), kE5M2)));
  if constexpr (D == DType::F8_E8M0) store(p, encode_e8m0(as_double(v)));
}

template <DType From, DType To>
void convert_loop(const std::byte* src, std::byte* dst, size_t count) {
  const size_t from_size = dtype_size(From);
  const size_t to_size = dtype_size(To);
  for (size_t i = 0; i < count; ++i) write<To>(dst + i * to_size, read<From>(src + i * from_size));
}

using Loop = void (*)(const std::byte*, std::byte*, size_t);
constexpr size_t kNumDTypes = std::size(kAllDTypes);

template <size_t... To>
constexpr std::array<Loop, kNumDTypes> row(auto from, std::index_sequence<To...>) {
  return {&convert_loop<decltype(from)::value, kAllDTypes[To]>...};
}

template <size_t... From>
constexpr auto table(std::index_sequence<From...> seq) {
  return std::array<std::array<Loop, kNumDTypes>, kNumDTypes>{
      row(std::integral_constant<DType, kAllDTypes[From]>{}, seq)...};
}

// kLoops[from][to], indexed by the enum's values (kAllDTypes lists them in order).
static_assert(static_cast<size_t>(kAllDTypes[kNumDTypes - 1]) == kNumDTypes - 1);
constexpr auto kLoops = table(std::make_index_sequence<kNumDTypes>{});

}  // namespace

void convert_scalar(DType from, const void* src, DType to, void* dst, size_t count) {
  if (count == 0) return;
  if (from == to) {
    std::memcpy(dst, src, count * dtype_size(from));
    return;
  }
  kLoops[static_cast<size_t>(from)][static_cast<size_t>(to)](static_cast<const std::byte*>(src),
                                                             static_cast<std::byte*>(dst), count);
}

float f16_bits_to_f32(uint16_t bits) { return static_cast<float>(decode(bits, kF16)); }

float bf16_bits_to_f32(uint16_t bits) { return static_cast<float>(decode(bits, kBF16)); }

uint16_t f32_to_f16_bits(float value) { return static_cast<uint16_t>(encode(value, kF16)); }

uint16_t f32_to_bf16_bits(float value) { return static_cast<uint16_t>(encode(value, kBF16)); }

}  // namespace wl
