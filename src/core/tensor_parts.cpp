#include "core/tensor_parts.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/named_errors.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// The name of `t`'s file among `files`, for messages (none for an index they do not list).
std::string file_name(const std::vector<std::string>& files, const TensorInfo& t) {
  return t.source < files.size() ? files[t.source] : std::string();
}

uint64_t product(const Shape& s, size_t from, size_t to) {
  uint64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

// The piece at rows [a, a + n) of `t`, with the part of t's row order that falls in it.
TensorInfo piece_with_rows(const TensorInfo& t, const TensorInfo& part, uint64_t a, const std::vector<std::string>& files) {
  TensorInfo piece = part;
  if (t.row_order.empty()) return piece;
  const uint64_t n = part.shape[0];
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t stored = t.row_order[a + i];
    if (stored < a || stored >= a + n)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("row order takes row {} from row {}, outside its piece [{}, {})", a + i, stored, a, a + n),
                  file_name(files, part), t.name);
    order[i] = part.row_order.empty() ? stored - a : part.row_order[stored - a];
  }
  piece.row_order = std::move(order);
  return piece;
}

// Rows [begin, end) of a raw, contiguous piece as a tensor of its own.
TensorInfo narrowed_rows(const TensorInfo& t, TensorInfo piece, uint64_t begin, uint64_t end, const std::vector<std::string>& files) {
  if (piece.decoder || !piece.strides.empty() || !piece.row_order.empty())
    throw Error(ErrorCode::UnsupportedLayout,
                "rows of a tensor assembled from column pieces need raw, contiguous pieces in stored row order",
                file_name(files, piece), t.name);
  const uint64_t row_bytes = product(piece.shape, 1, piece.shape.size()) * dtype_size(piece.dtype);
  piece.offset += begin * row_bytes;
  piece.shape[0] = end - begin;
  piece.nbytes = (end - begin) * row_bytes;
  return piece;
}

void expand(const ReadRequest& r, const std::vector<std::string>& files, std::deque<TensorInfo>& pieces, std::vector<ReadRequest>& out) {
  const TensorInfo& t = *r.tensor;
  const std::string file = file_name(files, t);
  const Shape sliced = naming_file(file, [&] { return slice_shape_of(t, r.slice); });  // validates the slice
  if (r.dst_outer_stride)
    throw Error(ErrorCode::InvalidArgument, "an assembled tensor is read into a packed destination", file, t.name);
  const size_t k = t.parts_dim;
  Slice s = r.slice;
  s.end = std::min(s.end, t.shape[s.dim]);
  if (s.dim != k && s.begin == 0 && s.end == t.shape[s.dim]) s = Slice{k, 0, t.shape[k]};  // all of it
  const size_t osize = dtype_size(r.dst_dtype);
  auto* dst = static_cast<std::byte*>(r.dst);
  const uint64_t inner_k = product(t.shape, k + 1, t.shape.size());
  uint64_t a = 0;
  for (const TensorInfo& part : t.parts) {
    const uint64_t n = part.shape[k];
    const uint64_t at = a;
    a += n;
    ReadRequest sub{nullptr, s, r.dst_dtype, nullptr};
    if (s.dim == k) {  // the slice's range within this piece
      const uint64_t lo = std::max(s.begin, at), hi = std::min(s.end, at + n);
      if (lo >= hi) continue;
      sub.slice = Slice{k, lo - at, hi - at};
      sub.dst = dst + (lo - s.begin) * inner_k * osize;
      sub.dst_outer_stride = k == 0 ? 0 : sliced[k] * inner_k;
      pieces.push_back(k == 0 ? piece_with_rows(t, part, at, files) : part);
    } else if (k == 0) {  // row pieces, sliced along a later dim: each fills whole rows of the slice
      sub.dst = dst + at * product(sliced, 1, sliced.size()) * osize;
      pieces.push_back(piece_with_rows(t, part, at, files));
    } else if (s.dim == 0) {  // rows of column pieces: those rows of each piece, into its column block
      if (s.begin == s.end) continue;
      sub.slice = Slice{k, 0, n};
      sub.dst = dst + at * inner_k * osize;
      sub.dst_outer_stride = t.shape[k] * inner_k;
      pieces.push_back(narrowed_rows(t, part, s.begin, s.end, files));
    } else {
      throw Error(ErrorCode::UnsupportedLayout,
                  fmt::format("a slice along dim {} of a tensor assembled along dim {}", s.dim, k), file, t.name);
    }
    sub.tensor = &pieces.back();
    out.push_back(sub);
  }
}

}  // namespace

void check_parts(const TensorInfo& t, const std::vector<std::string>& files) {
  if (t.parts.empty()) return;
  auto bad = [&](const std::string& why) { return Error(ErrorCode::InvalidArgument, why, file_name(files, t.parts.front()), t.name); };
  if (t.shape.empty() || t.parts_dim >= t.shape.size()) throw bad(fmt::format("pieces along dim {} of a tensor of rank {}", t.parts_dim, t.shape.size()));
  if (!t.row_order.empty() && t.parts_dim != 0) throw bad("a row order needs pieces along dim 0");
  uint64_t sum = 0;
  for (const TensorInfo& p : t.parts) {
    if (!p.parts.empty()) throw bad("a piece is itself assembled from pieces");
    Shape want = t.shape;
    want[t.parts_dim] = p.shape.size() == t.shape.size() ? p.shape[t.parts_dim] : 0;
    if (p.shape != want || p.dtype != t.dtype)
      throw bad(fmt::format("piece {} ({} {}) does not fit {} {} along dim {}", file_name(files, p), dtype_name(p.dtype), shape_to_string(p.shape),
                            dtype_name(t.dtype), shape_to_string(t.shape), t.parts_dim));
    sum += p.shape[t.parts_dim];
  }
  if (sum != t.shape[t.parts_dim])
    throw bad(fmt::format("pieces sum to {} along dim {}, not {}", sum, t.parts_dim, t.shape[t.parts_dim]));
}

std::vector<ReadRequest> expand_parts(const std::vector<ReadRequest>& requests, const std::vector<std::string>& files,
                                      std::deque<TensorInfo>& pieces) {
  std::vector<ReadRequest> out;
  out.reserve(requests.size());
  for (const ReadRequest& r : requests) {
    if (r.tensor->parts.empty()) out.push_back(r);
    else expand(r, files, pieces, out);
  }
  return out;
}

}  // namespace wl
