// convert(): copies, SIMD kernels for the hot float pairs, the scalar reference for the rest.
#include "weightloader/dtype_convert.hpp"

#include <cstring>

#include "core/dtype_convert_hwy.hpp"

namespace wl {

void convert(DType from, const void* src, DType to, void* dst, size_t count) {
  if (count == 0) return;
  if (from == to) {
    std::memcpy(dst, src, count * dtype_size(from));
    return;
  }
  if (detail::convert_simd(from, src, to, dst, count)) return;
  convert_scalar(from, src, to, dst, count);
}

}  // namespace wl
