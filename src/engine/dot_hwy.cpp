#include "engine/dot_hwy.hpp"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/dot_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "weightloader/dtype_convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace wl::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using D16 = hn::Rebind<uint16_t, DF>;

// N halves widened to N floats.
HWY_INLINE hn::Vec<DF> Widen(const uint16_t* p, bool bf16) {
  const DF df;
  const DU du;
  const D16 d16;
  const hn::Vec<DU> bits = hn::PromoteTo(du, hn::LoadU(d16, p));
  if (bf16) return hn::BitCast(df, hn::ShiftLeft<16>(bits));
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::BitCast(dh, hn::LoadU(d16, p)));
}

void DotRowsHalf(bool bf16, const uint16_t* w, uint64_t rows, uint64_t cols, const float* x, float* y) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (uint64_t r = 0; r < rows; ++r, w += cols) {
    hn::Vec<DF> a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
    uint64_t i = 0;
    for (; i + 4 * N <= cols; i += 4 * N) {
      a0 = hn::MulAdd(Widen(w + i, bf16), hn::LoadU(df, x + i), a0);
      a1 = hn::MulAdd(Widen(w + i + N, bf16), hn::LoadU(df, x + i + N), a1);
      a2 = hn::MulAdd(Widen(w + i + 2 * N, bf16), hn::LoadU(df, x + i + 2 * N), a2);
      a3 = hn::MulAdd(Widen(w + i + 3 * N, bf16), hn::LoadU(df, x + i + 3 * N), a3);
    }
    for (; i + N <= cols; i += N) a0 = hn::MulAdd(Widen(w + i, bf16), hn::LoadU(df, x + i), a0);
    float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < cols; ++i) {
      float v;
      if (bf16) {
        const uint32_t bits = uint32_t(w[i]) << 16;
        std::memcpy(&v, &bits, 4);
      } else {
        v = f16_bits_to_f32(w[i]);
      }
      sum += v * x[i];
    }
    y[r] = sum;
  }
}

}  // namespace wl::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace wl {

HWY_EXPORT(DotRowsHalf);

void dot_rows_half(DType dtype, const void* w, uint64_t rows, uint64_t cols, const float* x, float* y) {
  HWY_DYNAMIC_DISPATCH(DotRowsHalf)(dtype == DType::BF16, static_cast<const uint16_t*>(w), rows, cols, x, y);
}

}  // namespace wl
#endif  // HWY_ONCE
