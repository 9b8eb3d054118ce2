#include "convert/split_part.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {

bool splits_rows(const StoredParts& how) { return !how.columns && how.names.size() > 1; }

}  // namespace

Shape stored_part_shape(const Shape& shape, const StoredParts& how, const std::string& origin, const std::string& tensor) {
  const uint64_t n = how.names.size();
  Shape out = shape;
  if (n > 1) {
    uint64_t none = 0;
    uint64_t& dim = shape.empty() ? none : how.columns ? out.back() : out.front();
    if (dim == 0 || dim % n != 0)
      throw Error(ErrorCode::ShapeMismatch,
                  fmt::format("{} of shape {} does not split into the {} equal parts GGUF stores", how.columns ? "the last dim" : "dim 0",
                              shape_to_string(shape), n),
                  origin, tensor);
    dim /= n;
  }
  if (how.transposed) {
    if (out.size() < 2)
      throw Error(ErrorCode::ShapeMismatch, fmt::format("a tensor of shape {} has no two dims to transpose", shape_to_string(shape)), origin,
                  tensor);
    std::swap(out[out.size() - 2], out.back());
  }
  return out;
}

bool splits_by_slot(const Shape& shape, const StoredParts& how) {
  return !splits_rows(how) && shape.size() >= (how.transposed ? 3u : 2u);
}

TensorView stored_part(const TensorView& whole, const StoredParts& how, size_t index) {
  const Shape& shape = whole.shape();
  const uint64_t n = std::max<uint64_t>(how.names.size(), 1);
  // The part's values before any transposition: the index-th of n blocks (or every n-th from index)
  // of dim 0's slabs, or of each row's columns.
  Shape split = shape;
  if (splits_rows(how)) split.front() /= n;
  if (how.columns) split.back() /= n;
  TensorView part = TensorView::empty(DType::F32, split);
  const float* in = whole.data<float>();
  float* out = part.data<float>();
  if (splits_rows(how)) {
    const uint64_t slab = whole.numel() / shape.front();
    for (uint64_t k = 0; k < split.front(); ++k) std::copy_n(in + part_source(how, index, k, split.front()) * slab, slab, out + k * slab);
  } else {
    const uint64_t cols = shape.empty() ? 1 : shape.back(), part_cols = split.empty() ? 1 : split.back();
    for (uint64_t r = 0; cols && r < whole.numel() / cols; ++r)
      for (uint64_t c = 0; c < part_cols; ++c) out[r * part_cols + c] = in[r * cols + (how.columns ? part_source(how, index, c, part_cols) : c)];
  }
  if (!how.transposed) return part;
  // Each matrix of the last two dims, [m, k], as [k, m].
  const uint64_t m = split[split.size() - 2], k = split.back(), matrices = m * k == 0 ? 0 : part.numel() / (m * k);
  Shape swapped = split;
  std::swap(swapped[swapped.size() - 2], swapped.back());
  TensorView t = TensorView::empty(DType::F32, swapped);
  float* to = t.data<float>();
  for (uint64_t b = 0; b < matrices; ++b)
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < k; ++j) to[b * m * k + j * m + i] = out[b * m * k + i * k + j];
  return t;
}

}  // namespace wl
