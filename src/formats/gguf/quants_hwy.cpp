// Highway kernels for ggml's block formats. Every lane computes what the scalar reference (one file per
// type in decoders/) computes for its element, with the same float operations in the same order (the
// per-group factors d * scale are formed in scalar code exactly as there), so results are
// bit-identical on every target. Vectors hold at most 16 floats so that they divide the 16- and
// 32-element runs the block layouts are made of.
#include <cstring>

#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/quants.hpp"
#include "weightloader/dtype_convert.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "formats/gguf/quants_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace wl::gguf::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::CappedTag<float, 16>;
using DI = hn::RebindToSigned<DF>;
using VI = hn::Vec<DI>;

HWY_INLINE float F16At(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return f16_bits_to_f32(bits);
}

// N bytes from p, widened to int32 lanes (unsigned or signed).
HWY_INLINE VI LoadU8(const uint8_t* p) { return hn::BitCast(DI(), hn::PromoteTo(hn::RebindToUnsigned<DI>(), hn::LoadU(hn::Rebind<uint8_t, DI>(), p))); }
HWY_INLINE VI LoadI8(const uint8_t* p) {
  return hn::PromoteTo(DI(), hn::LoadU(hn::Rebind<int8_t, DI>(), reinterpret_cast<const int8_t*>(p)));
}
HWY_INLINE hn::Vec<DF> ToFloat(VI v) { return hn::ConvertTo(DF(), v); }
HWY_INLINE VI Low4(VI v) { return hn::And(v, hn::Set(DI(), 0x0F)); }
HWY_INLINE VI High4(VI v) { return hn::ShiftRight<4>(v); }
// The fifth bits of elements j .. j + N - 1 from a Q5 block's 32-bit qh word, as 0 or 16.
HWY_INLINE VI Q5High(uint32_t qh, int j) {
  const DI di;
  const hn::RebindToUnsigned<DI> du;
  const auto shifts = hn::BitCast(du, hn::Add(hn::Iota(di, 0), hn::Set(di, j)));
  const auto bits = hn::And(hn::Set(du, qh) >> shifts, hn::Set(du, 1u));
  return hn::ShiftLeft<4>(hn::BitCast(di, bits));
}

// y[i] = float(q[i]) * d  (Q4_0, Q5_0, Q8_0)
HWY_INLINE void StoreScaled(VI q, float d, float* y) { hn::StoreU(hn::Mul(ToFloat(q), hn::Set(DF(), d)), DF(), y); }
// y[i] = float(q[i]) * d + m  (Q4_1, Q5_1)
HWY_INLINE void StoreAffine(VI q, float d, float m, float* y) {
  hn::StoreU(hn::Add(hn::Mul(ToFloat(q), hn::Set(DF(), d)), hn::Set(DF(), m)), DF(), y);
}
// y[i] = d * float(q[i]) - m  (Q4_K, Q5_K)
HWY_INLINE void StoreScaledMinus(VI q, float d, float m, float* y) {
  hn::StoreU(hn::Sub(hn::Mul(hn::Set(DF(), d), ToFloat(q)), hn::Set(DF(), m)), DF(), y);
}

void Q8_0(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const float d = F16At(b);
  for (size_t j = 0; j < 32; j += N) StoreScaled(LoadI8(b + 2 + j), d, y + j);
}

void Q4_0(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const float d = F16At(b);
  const VI eight = hn::Set(DI(), 8);
  for (size_t j = 0; j < 16; j += N) {
    const VI q = LoadU8(b + 2 + j);
    StoreScaled(hn::Sub(Low4(q), eight), d, y + j);
    StoreScaled(hn::Sub(High4(q), eight), d, y + j + 16);
  }
}

void Q4_1(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const float d = F16At(b), m = F16At(b + 2);
  for (size_t j = 0; j < 16; j += N) {
    const VI q = LoadU8(b + 4 + j);
    StoreAffine(Low4(q), d, m, y + j);
    StoreAffine(High4(q), d, m, y + j + 16);
  }
}

void Q5_0(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const float d = F16At(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, sizeof qh);
  const VI sixteen = hn::Set(DI(), 16);
  for (size_t j = 0; j < 16; j += N) {
    const VI q = LoadU8(b + 6 + j);
    StoreScaled(hn::Sub(hn::Or(Low4(q), Q5High(qh, int(j))), sixteen), d, y + j);
    StoreScaled(hn::Sub(hn::Or(High4(q), Q5High(qh, int(j) + 16)), sixteen), d, y + j + 16);
  }
}

void Q5_1(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const float d = F16At(b), m = F16At(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, sizeof qh);
  for (size_t j = 0; j < 16; j += N) {
    const VI q = LoadU8(b + 8 + j);
    StoreAffine(hn::Or(Low4(q), Q5High(qh, int(j))), d, m, y + j);
    StoreAffine(hn::Or(High4(q), Q5High(qh, int(j) + 16)), d, m, y + j + 16);
  }
}

// Q4_K (with_qh false) and Q5_K (true): four groups of 64 elements.
template <bool kWithQh>
void QK(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const DI di;
  const float d = F16At(b), dmin = F16At(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = kWithQh ? b + 48 : b + 16;
  for (int g = 0; g < 4; ++g, q += 32, y += 64) {
    const auto [d1, m1, d2, m2] = decoders::k4_group_scales(d, dmin, scales, g);
    for (size_t l = 0; l < 32; l += N) {
      const VI v = LoadU8(q + l);
      VI lo = Low4(v), hi = High4(v);
      if constexpr (kWithQh) {
        const VI h = LoadU8(qh + l);
        const VI zero = hn::Zero(di), sixteen = hn::Set(di, 16);
        lo = hn::Add(lo, hn::IfThenElse(hn::Eq(hn::And(h, hn::Set(di, 1 << (2 * g))), zero), zero, sixteen));
        hi = hn::Add(hi, hn::IfThenElse(hn::Eq(hn::And(h, hn::Set(di, 2 << (2 * g))), zero), zero, sixteen));
      }
      StoreScaledMinus(lo, d1, m1, y + l);
      StoreScaledMinus(hi, d2, m2, y + 32 + l);
    }
  }
}

void Q6_K(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const DI di;
  const DF df;
  const float d = F16At(b + 208);
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const VI three = hn::Set(di, 3), thirty_two = hn::Set(di, 32);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (size_t l = 0; l < 32; l += N) {
      const int is = static_cast<int>(l / 16);
      const VI lo = LoadU8(ql + l), lo2 = LoadU8(ql + l + 32), h = LoadU8(qh + l);
      const VI q1 = hn::Sub(hn::Or(Low4(lo), hn::ShiftLeft<4>(hn::And(h, three))), thirty_two);
      const VI q2 = hn::Sub(hn::Or(Low4(lo2), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(h), three))), thirty_two);
      const VI q3 = hn::Sub(hn::Or(High4(lo), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(h), three))), thirty_two);
      const VI q4 = hn::Sub(hn::Or(High4(lo2), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<6>(h), three))), thirty_two);
      // (d * scale) * q, as the reference's d * float(sc) * float(q) associates.
      hn::StoreU(hn::Mul(hn::Set(df, d * static_cast<float>(sc[is])), ToFloat(q1)), df, y + l);
      hn::StoreU(hn::Mul(hn::Set(df, d * static_cast<float>(sc[is + 2])), ToFloat(q2)), df, y + l + 32);
      hn::StoreU(hn::Mul(hn::Set(df, d * static_cast<float>(sc[is + 4])), ToFloat(q3)), df, y + l + 64);
      hn::StoreU(hn::Mul(hn::Set(df, d * static_cast<float>(sc[is + 6])), ToFloat(q4)), df, y + l + 96);
    }
  }
}

// Q2_K: sixteen sub-blocks of 16 elements, each bits 2s..2s+1 of 16 bytes: (d * scale) * q - dmin * min.
void Q2_K(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const DI di;
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = F16At(b + 80), dmin = F16At(b + 82);
  const VI three = hn::Set(di, 3);
  for (int g = 0; g < 2; ++g, qs += 32) {
    for (int s = 0; s < 4; ++s) {
      for (int half = 0; half < 2; ++half, y += 16) {
        const uint8_t sc = *scales++;
        const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
        for (size_t l = 0; l < 16; l += N)
          StoreScaledMinus(hn::And(hn::ShiftRightSame(LoadU8(qs + 16 * half + l), 2 * s), three), dl, ml, y + l);
      }
    }
  }
}

// Q3_K: as decoders/q3_k.cpp: q = low 2 bits - (hmask bit ? 0 : 4), value (d * scale) * q.
void Q3_K(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const DI di;
  const DF df;
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* packed = b + 96;
  const float d = F16At(b + 108);
  int scales[16];
  decoders::q3_k_scales(packed, scales);
  const VI three = hn::Set(di, 3), one = hn::Set(di, 1), four = hn::Set(di, 4);
  for (int g = 0; g < 2; ++g, qs += 32) {
    for (int s = 0; s < 4; ++s) {
      const int bit = 4 * g + s;
      for (int half = 0; half < 2; ++half, y += 16) {
        const float dl = d * static_cast<float>(scales[8 * g + 2 * s + half]);
        for (size_t l = 0; l < 16; l += N) {
          const size_t m = 16 * static_cast<size_t>(half) + l;
          const VI low = hn::And(hn::ShiftRightSame(LoadU8(qs + m), 2 * s), three);
          const VI high = hn::And(hn::ShiftRightSame(LoadU8(hmask + m), bit), one);
          const VI q = hn::Sub(hn::Add(low, hn::ShiftLeft<2>(high)), four);  // low - (high ? 0 : 4)
          hn::StoreU(hn::Mul(hn::Set(df, dl), ToFloat(q)), df, y + l);
        }
      }
    }
  }
}

// IQ4_XS: the 4-bit codes of a group of 32 become int8 values by a 16-byte table lookup, then
// (d * scale) * value as decoders/iq4_xs.cpp.
void IQ4_XS(const uint8_t* b, float* y) {
  const size_t N = hn::Lanes(DF());
  const DF df;
  alignas(16) static constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint8_t> d8;
  const auto table = hn::BitCast(d8, hn::Load(hn::Full128<int8_t>(), kValues));
#endif
  const float d = F16At(b);
  uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, sizeof scales_h);
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  alignas(16) uint8_t values[32];  // the group's int8 values
  for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
#if HWY_TARGET != HWY_SCALAR
    const auto codes = hn::LoadU(d8, qs);
    hn::Store(hn::TableLookupBytes(table, hn::And(codes, hn::Set(d8, uint8_t{0x0F}))), d8, values);
    hn::Store(hn::TableLookupBytes(table, hn::ShiftRight<4>(codes)), d8, values + 16);
#else
    for (int j = 0; j < 16; ++j) {
      values[j] = static_cast<uint8_t>(kValues[qs[j] & 0x0F]);
      values[j + 16] = static_cast<uint8_t>(kValues[qs[j] >> 4]);
    }
#endif
    for (size_t j = 0; j < 32; j += N) hn::StoreU(hn::Mul(hn::Set(df, dl), ToFloat(LoadI8(values + j))), df, y + j);
  }
}

template <void (*Block)(const uint8_t*, float*)>
void Rows(const uint8_t* in, uint64_t nblocks, uint64_t block_bytes, uint64_t block_elems, float* out) {
  for (uint64_t i = 0; i < nblocks; ++i) Block(in + i * block_bytes, out + i * block_elems);
}

bool Dequantize(GgmlType type, const uint8_t* in, uint64_t n, float* out) {
  switch (type) {
    case GgmlType::Q8_0: Rows<Q8_0>(in, n, 34, 32, out); return true;
    case GgmlType::Q4_0: Rows<Q4_0>(in, n, 18, 32, out); return true;
    case GgmlType::Q4_1: Rows<Q4_1>(in, n, 20, 32, out); return true;
    case GgmlType::Q5_0: Rows<Q5_0>(in, n, 22, 32, out); return true;
    case GgmlType::Q5_1: Rows<Q5_1>(in, n, 24, 32, out); return true;
    case GgmlType::Q4_K: Rows<QK<false>>(in, n, 144, 256, out); return true;
    case GgmlType::Q5_K: Rows<QK<true>>(in, n, 176, 256, out); return true;
    case GgmlType::Q6_K: Rows<Q6_K>(in, n, 210, 256, out); return true;
    case GgmlType::Q2_K: Rows<Q2_K>(in, n, 84, 256, out); return true;
    case GgmlType::Q3_K: Rows<Q3_K>(in, n, 110, 256, out); return true;
    case GgmlType::IQ4_XS: Rows<IQ4_XS>(in, n, 136, 256, out); return true;
    default: return false;
  }
}

}  // namespace wl::gguf::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace wl::gguf {

HWY_EXPORT(Dequantize);

bool dequantize_simd(GgmlType type, const uint8_t* blocks, uint64_t nblocks, float* out) {
  return HWY_DYNAMIC_DISPATCH(Dequantize)(type, blocks, nblocks, out);
}

}  // namespace wl::gguf
#endif  // HWY_ONCE
