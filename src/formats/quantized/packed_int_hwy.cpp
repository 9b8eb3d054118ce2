// GPTQ / AWQ kernels. The weights are stored transposed ([in, out] order), so both walk tiles of
// kTile output rows: the tile's words of one packed row are one cache line, and each output row
// receives a contiguous run per packed row.
#include "formats/quantized/packed_int_hwy.hpp"

#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "formats/quantized/packed_int_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace wl::quant::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr uint64_t kTile = 16;

// One packed row r of a GPTQ tile [t0, t1): Pack inputs per word, all in group g (checked by the
// caller); w holds rows from `first` on.
template <int Pack>
void GptqRow(const uint32_t* words, const PackedGrid& p, uint64_t r, uint64_t t0, uint64_t t1, uint64_t first, float* w) {
  using DF = hn::CappedTag<float, Pack>;
  using DU = hn::RebindToUnsigned<DF>;
  const DF df;
  const DU du;
  const size_t N = hn::Lanes(df);
  const uint32_t bits = static_cast<uint32_t>(p.bits);
  const uint64_t g = p.group[r * Pack];
  const auto mask = hn::Set(du, (1u << bits) - 1);
  for (uint64_t o = t0; o < t1; ++o) {
    const auto word = hn::Set(du, words[r * p.out + o]);
    const auto z = hn::Set(df, p.zeros[g * p.out + o]), s = hn::Set(df, p.scales[g * p.out + o]);
    float* row = w + (o - first) * p.in + r * Pack;
    for (size_t k = 0; k < static_cast<size_t>(Pack); k += N) {
      const auto shifts = hn::Mul(hn::Add(hn::Iota(du, 0), hn::Set(du, static_cast<uint32_t>(k))), hn::Set(du, bits));
      const auto q = hn::ConvertTo(df, hn::BitCast(hn::RebindToSigned<DF>(), hn::And(hn::Shr(word, shifts), mask)));
      hn::StoreU(hn::Mul(hn::Sub(q, z), s), df, row + k);
    }
  }
}

void ScalarGptq(const uint32_t* words, const PackedGrid& p, uint64_t o0, uint64_t o1, float* w) {
  const uint64_t pack = 32 / static_cast<uint64_t>(p.bits);
  const uint32_t mask = (1u << p.bits) - 1;
  for (uint64_t t0 = o0; t0 < o1; t0 += kTile)
    for (uint64_t i = 0; i < p.in; ++i) {
      const uint64_t g = p.group[i], r = i / pack, shift = static_cast<uint64_t>(p.bits) * (i % pack);
      for (uint64_t o = t0; o < std::min(o1, t0 + kTile); ++o) {
        const float q = static_cast<float>((words[r * p.out + o] >> shift) & mask);
        w[(o - o0) * p.in + i] = (q - p.zeros[g * p.out + o]) * p.scales[g * p.out + o];
      }
    }
}

template <int Pack>
void TiledGptq(const uint32_t* words, const PackedGrid& p, uint64_t o0, uint64_t o1, float* w) {
  for (uint64_t t0 = o0; t0 < o1; t0 += kTile)
    for (uint64_t r = 0; r < p.in / Pack; ++r) GptqRow<Pack>(words, p, r, t0, std::min(o1, t0 + kTile), o0, w);
}

void DecodeGptq(const uint32_t* words, const PackedGrid& p, uint64_t o0, uint64_t o1, float* w) {
  const uint64_t pack = 32 / static_cast<uint64_t>(p.bits);
  if (p.words_share_groups) {
    if (pack == 8) return TiledGptq<8>(words, p, o0, o1, w);
    if (pack == 4) return TiledGptq<4>(words, p, o0, o1, w);
    if (pack == 16) return TiledGptq<16>(words, p, o0, o1, w);
  }
  ScalarGptq(words, p, o0, o1, w);
}

// AWQ: a word holds 8 outputs of one input, so the natural vector runs along the outputs; the
// destination is [out, in], so a tile's values for one input are scattered down its rows.
void DecodeAwq(const uint32_t* words, const PackedGrid& p, const int* slot, uint64_t o0, uint64_t o1, float* w) {
  const uint64_t per_row = p.out / 8;
  for (uint64_t t0 = o0; t0 < o1; t0 += kTile)
    for (uint64_t i = 0; i < p.in; ++i) {
      const uint64_t g = p.group[i];
      for (uint64_t o = t0; o < std::min(o1, t0 + kTile); ++o) {
        const uint32_t word = words[i * per_row + o / 8];
        const float q = static_cast<float>((word >> (4 * slot[o % 8])) & 15u);
        w[(o - o0) * p.in + i] = (q - p.zeros[g * p.out + o]) * p.scales[g * p.out + o];
      }
    }
}

}  // namespace wl::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace wl::quant {

bool words_share_groups(const uint32_t* group, uint64_t in, int bits) {
  const uint64_t pack = 32 / static_cast<uint64_t>(bits);
  for (uint64_t i = 0; i < in; i += pack)
    if (!std::all_of(group + i, group + std::min(in, i + pack), [&](uint32_t g) { return g == group[i]; })) return false;
  return true;
}

HWY_EXPORT(DecodeGptq);
HWY_EXPORT(DecodeAwq);

void decode_gptq(const uint32_t* qweight, const PackedGrid& grid, uint64_t o0, uint64_t o1, float* w) {
  HWY_DYNAMIC_DISPATCH(DecodeGptq)(qweight, grid, o0, o1, w);
}
void decode_awq(const uint32_t* qweight, const PackedGrid& grid, const int* slot, uint64_t o0, uint64_t o1, float* w) {
  HWY_DYNAMIC_DISPATCH(DecodeAwq)(qweight, grid, slot, o0, o1, w);
}

}  // namespace wl::quant
#endif  // HWY_ONCE
