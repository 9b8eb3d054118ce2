// Highway kernels for conversions among F32, BF16, F16, F8_E4M3 and F8_E5M2.
//
// Every lane is widened to 32 bits and decoded to F32 bits (exact: each of these formats fits in
// F32), then encoded to the target with integer round-to-nearest-even, so each pair rounds once.
// All rounding is done with integer ops rather than the targets' own f16/bf16 demotions, so every
// target gives the same bits as convert_scalar, canonical NaNs included.
#include <cstring>
#include <type_traits>

#include "core/dtype_convert_hwy.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/dtype_convert_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace wl::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<uint32_t>;
using VU = hn::Vec<DU>;

struct F32Format {
  using Bits = uint32_t;
};
struct BF16Format {
  using Bits = uint16_t;
};
// An IEEE-like format narrower than F32, or with kFn the F8_E4M3 "FN" layout (no Inf,
// S.1111.111 is NaN, overflow saturates).
template <int kExp, int kMant, bool kFn>
struct SmallFormat {
  using Bits = std::conditional_t<(kExp + kMant < 8), uint8_t, uint16_t>;
};
using F16Format = SmallFormat<5, 10, false>;
using E4M3Format = SmallFormat<4, 3, true>;
using E5M2Format = SmallFormat<5, 2, false>;

constexpr uint32_t kF32QuietNaN = 0x7FC00000;

// Lane-wise a < b and a > b for values below 2^31 (signed compares exist on every target).
HWY_INLINE hn::Mask<DU> Less(VU a, uint32_t b) {
  const hn::RebindToSigned<DU> di;
  return hn::RebindMask(DU(), hn::BitCast(di, a) < hn::Set(di, static_cast<int32_t>(b)));
}
HWY_INLINE hn::Mask<DU> Greater(VU a, uint32_t b) {
  const hn::RebindToSigned<DU> di;
  return hn::RebindMask(DU(), hn::BitCast(di, a) > hn::Set(di, static_cast<int32_t>(b)));
}

HWY_INLINE VU ToF32(F32Format, VU v) { return v; }
HWY_INLINE VU FromF32(F32Format, VU v) { return v; }

HWY_INLINE VU ToF32(BF16Format, VU v) {
  const DU du;
  const VU abs = hn::And(v, hn::Set(du, 0x7FFF));
  const VU nan = hn::Or(hn::ShiftLeft<16>(hn::And(v, hn::Set(du, 0x8000))), hn::Set(du, kF32QuietNaN));
  return hn::IfThenElse(Greater(abs, 0x7F80), nan, hn::ShiftLeft<16>(v));
}

HWY_INLINE VU FromF32(BF16Format, VU v) {
  const DU du;
  const VU abs = hn::And(v, hn::Set(du, 0x7FFFFFFF));
  const VU lsb = hn::And(hn::ShiftRight<16>(v), hn::Set(du, 1));
  // Adding 0x7FFF plus the kept lsb carries exactly when the dropped half rounds up (ties to even).
  const VU rounded = hn::ShiftRight<16>(hn::Add(hn::Add(v, hn::Set(du, 0x7FFF)), lsb));
  const VU nan = hn::Or(hn::ShiftRight<16>(hn::And(v, hn::Set(du, 0x80000000u))), hn::Set(du, 0x7FC0));
  return hn::IfThenElse(Greater(abs, 0x7F800000), nan, rounded);
}

template <int kExp, int kMant, bool kFn>
HWY_INLINE VU ToF32(SmallFormat<kExp, kMant, kFn>, VU v) {
  constexpr uint32_t kBias = (1u << (kExp - 1)) - 1;
  constexpr uint32_t kSignBit = 1u << (kExp + kMant);
  constexpr uint32_t kInf = ((1u << kExp) - 1) << kMant;
  const DU du;
  const hn::RebindToSigned<DU> di;
  const hn::RebindToFloat<DU> df;
  const VU sign = hn::ShiftLeft<31 - kExp - kMant>(hn::And(v, hn::Set(du, kSignBit)));
  const VU abs = hn::And(v, hn::Set(du, kSignBit - 1));
  const VU normal = hn::Add(hn::ShiftLeft<23 - kMant>(abs), hn::Set(du, (127 - kBias) << 23));
  // A subnormal is mant * 2^(1 - bias - kMant): the float multiply is exact (and normal).
  const VU scale = hn::Set(du, (127 + 1 - kBias - kMant) << 23);
  const VU subnormal = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, abs)), hn::BitCast(df, scale)));
  VU r = hn::IfThenElse(Less(abs, 1u << kMant), subnormal, normal);
  if constexpr (kFn) {
    r = hn::IfThenElse(hn::Eq(abs, hn::Set(du, kSignBit - 1)), hn::Set(du, kF32QuietNaN), r);
  } else {
    const VU special =
        hn::IfThenElse(hn::Eq(abs, hn::Set(du, kInf)), hn::Set(du, 0x7F800000), hn::Set(du, kF32QuietNaN));
    r = hn::IfThenElse(Less(abs, kInf), r, special);
  }
  return hn::Or(r, sign);
}

template <int kExp, int kMant, bool kFn>
HWY_INLINE VU FromF32(SmallFormat<kExp, kMant, kFn>, VU v) {
  constexpr uint32_t kBias = (1u << (kExp - 1)) - 1;
  constexpr int kShift = 23 - kMant;
  constexpr uint32_t kMantMask = (1u << kMant) - 1;
  constexpr uint32_t kInf = ((1u << kExp) - 1) << kMant;
  constexpr uint32_t kNaN = kFn ? (1u << (kExp + kMant)) - 1 : kInf | (1u << (kMant - 1));
  constexpr uint32_t kMaxFinite = kFn ? kNaN - 1 : kInf - 1;
  // The same values as F32 bits: the smallest normal and the largest finite.
  constexpr uint32_t kMinNormalF32 = (127 + 1 - kBias) << 23;
  constexpr uint32_t kMaxFiniteF32 =
      (((kMaxFinite >> kMant) + 127 - kBias) << 23) | ((kMaxFinite & kMantMask) << kShift);
  // IEEE formats: from max finite + half an ulp up, values round to Inf (max finite is odd, so
  // the tie goes up too). FN: max finite is even, so anything above it that does not round back
  // down would land on the NaN pattern; saturate instead.
  constexpr uint32_t kOverflowF32 = kFn ? kMaxFiniteF32 + 1 : kMaxFiniteF32 + (1u << (kShift - 1));
  const DU du;
  const VU one = hn::Set(du, 1);
  const VU sign = hn::ShiftLeft<kExp + kMant>(hn::ShiftRight<31>(v));
  const VU abs = hn::And(v, hn::Set(du, 0x7FFFFFFF));

  const VU lsb = hn::And(hn::ShiftRight<kShift>(abs), one);
  const VU rounded = hn::ShiftRight<kShift>(hn::Add(hn::Add(abs, hn::Set(du, (1u << (kShift - 1)) - 1)), lsb));
  const VU normal = hn::Sub(rounded, hn::Set(du, (127 - kBias) << kMant));

  // Below the smallest normal the spacing is 2^(1 - bias - kMant): shift the 24-bit significand
  // right by s = 151 - bias - kMant - exponent (at least kShift + 1; from 25 on the result is 0,
  // which also covers F32 subnormals).
  const VU exponent = hn::Min(hn::ShiftRight<23>(abs), hn::Set(du, 127 - kBias));
  const VU s = hn::Min(hn::Sub(hn::Set(du, 151 - kBias - kMant), exponent), hn::Set(du, 31));
  const VU significand = hn::Or(hn::And(abs, hn::Set(du, 0x7FFFFF)), hn::Set(du, 0x800000));
  const VU sub_lsb = hn::And(significand >> s, one);
  const VU half_minus_one = hn::Sub(one << hn::Sub(s, one), one);
  const VU subnormal = hn::Add(hn::Add(significand, half_minus_one), sub_lsb) >> s;

  VU r = hn::IfThenElse(Less(abs, kMinNormalF32), subnormal, normal);
  r = hn::IfThenElse(Less(abs, kOverflowF32), r, hn::Set(du, kFn ? kMaxFinite : kInf));
  r = hn::IfThenElse(Greater(abs, kFn ? 0x7F7FFFFFu : 0x7F800000u), hn::Set(du, kNaN), r);
  return hn::Or(r, sign);
}

template <typename T>
HWY_INLINE VU LoadBits(const T* p) {
  if constexpr (sizeof(T) == 4) {
    return hn::LoadU(DU(), p);
  } else {
    return hn::PromoteTo(DU(), hn::LoadU(hn::Rebind<T, DU>(), p));
  }
}

template <typename T>
HWY_INLINE void StoreBits(VU v, T* p) {
  if constexpr (sizeof(T) == 4) {
    hn::StoreU(v, DU(), p);
  } else {
    const hn::Rebind<T, DU> d;
    hn::StoreU(hn::TruncateTo(d, v), d, p);
  }
}

template <class From, class To>
void ConvertLoop(const void* src, void* dst, size_t count) {
  using TFrom = typename From::Bits;
  using TTo = typename To::Bits;
  const TFrom* in = static_cast<const TFrom*>(src);
  TTo* out = static_cast<TTo*>(dst);
  const size_t lanes = hn::Lanes(DU());
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) StoreBits(FromF32(To(), ToF32(From(), LoadBits(in + i))), out + i);
  if (i == count) return;
  // The tail runs through the same vector code on zero-padded copies.
  constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(uint32_t);
  TFrom tail_in[kMaxLanes] = {};
  TTo tail_out[kMaxLanes];
  std::memcpy(tail_in, in + i, (count - i) * sizeof(TFrom));
  StoreBits(FromF32(To(), ToF32(From(), LoadBits(tail_in))), tail_out);
  std::memcpy(out + i, tail_out, (count - i) * sizeof(TTo));
}

template <class From>
bool ConvertFrom(DType to, const void* src, void* dst, size_t count) {
  switch (to) {
    case DType::F32: ConvertLoop<From, F32Format>(src, dst, count); return true;
    case DType::BF16: ConvertLoop<From, BF16Format>(src, dst, count); return true;
    case DType::F16: ConvertLoop<From, F16Format>(src, dst, count); return true;
    case DType::F8_E4M3: ConvertLoop<From, E4M3Format>(src, dst, count); return true;
    case DType::F8_E5M2: ConvertLoop<From, E5M2Format>(src, dst, count); return true;
    default: return false;
  }
}

bool ConvertFloats(DType from, DType to, const void* src, void* dst, size_t count) {
  switch (from) {
    case DType::F32: return ConvertFrom<F32Format>(to, src, dst, count);
    case DType::BF16: return ConvertFrom<BF16Format>(to, src, dst, count);
    case DType::F16: return ConvertFrom<F16Format>(to, src, dst, count);
    case DType::F8_E4M3: return ConvertFrom<E4M3Format>(to, src, dst, count);
    case DType::F8_E5M2: return ConvertFrom<E5M2Format>(to, src, dst, count);
    default: return false;
  }
}

}  // namespace wl::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace wl {

HWY_EXPORT(ConvertFloats);

namespace detail {

bool convert_simd(DType from, const void* src, DType to, void* dst, size_t count) {
  if (from == to) return false;
  return HWY_DYNAMIC_DISPATCH(ConvertFloats)(from, to, src, dst, count);
}

}  // namespace detail
}  // namespace wl
#endif  // HWY_ONCE
