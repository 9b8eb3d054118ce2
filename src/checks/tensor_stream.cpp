#include "checks/tensor_stream.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "weightloader/error.hpp"

namespace wl {

namespace {

// A group's tensors as rows: dim 0 (a 0-d tensor is one row of one element), `bytes` per row in
// the group's dtype.
struct Rows {
  uint64_t count = 0;
  uint64_t elems = 0;
  uint64_t bytes = 0;
};

Rows rows_of(const StreamGroup& g) {
  const TensorInfo& t = *g.sides.front().tensor;
  if (t.shape.empty()) return {1, 1, dtype_size(g.dtype)};
  const uint64_t elems = t.shape[0] ? t.numel() / t.shape[0] : 0;
  return {t.shape[0], elems, elems * dtype_size(g.dtype)};
}

// Rows [row_begin, row_end) of a group, at byte `offset` of each side's window buffer.
struct Planned {
  size_t group;
  uint64_t row_begin, row_end, first, count, offset;
};

}  // namespace

uint64_t stream_tensors(const std::vector<StreamGroup>& groups, const StreamOptions& o,
                        const std::function<void(const StreamPiece&)>& visit) {
  if (groups.empty()) return 0;
  const size_t sides = groups.front().sides.size();
  uint64_t stored_total = 0, stored_done = 0, bytes_read = 0, largest_row = 1, all = 0;
  for (const StreamGroup& g : groups) {
    if (g.sides.size() != sides) throw Error(ErrorCode::InvalidArgument, "every group needs the same number of sides");
    for (const StreamTensor& s : g.sides) stored_total += s.tensor->nbytes;
    const Rows r = rows_of(g);
    largest_row = std::max(largest_row, r.bytes);
    all += r.count * r.bytes;
  }
  // The window: the bound, grown to the largest row, shrunk to what the stream holds.
  const uint64_t window = std::max(largest_row, std::min(o.window_bytes, all));
  std::vector<std::unique_ptr<std::byte[]>> buffers;  // not zeroed: every value is read before it is seen
  for (size_t side = 0; side < sides; ++side) buffers.push_back(std::make_unique_for_overwrite<std::byte[]>(window));
  IoOptions io = o.io;
  io.progress = nullptr;  // reported here, over the whole stream
  io.prefault = false;    // the same buffers every window: touched once, by the first

  size_t group = 0;
  uint64_t row = 0;
  while (group < groups.size()) {
    // Fill one window with runs of rows, as many tensors as fit (offsets kept 8-byte aligned).
    std::vector<Planned> plan;
    uint64_t used = 0;
    while (group < groups.size()) {
      const Rows r = rows_of(groups[group]);
      if (r.elems == 0 || row >= r.count) {
        if (r.elems == 0 && row == 0) plan.push_back({group, 0, 0, 0, 0, used});  // an empty tensor: seen once
        ++group;
        row = 0;
        continue;
      }
      const uint64_t start = (used + 7) / 8 * 8;
      const uint64_t fit = start < window ? (window - start) / r.bytes : 0;
      if (fit == 0) break;
      const uint64_t take = std::min(fit, r.count - row);
      plan.push_back({group, row, row + take, row * r.elems, take * r.elems, start});
      used = start + take * r.bytes;
      row += take;
    }
    for (size_t side = 0; side < sides; ++side) {
      // One batch per source (a group's sides are usually different checkpoints).
      std::map<const WeightSource*, std::vector<ReadRequest>> batches;
      for (const Planned& p : plan) {
        if (p.count == 0) continue;
        const StreamTensor& s = groups[p.group].sides[side];
        const Slice rows = s.tensor->shape.empty() ? Slice{} : Slice{0, p.row_begin, p.row_end};
        batches[s.source].push_back({s.tensor, rows, groups[p.group].dtype, buffers[side].get() + p.offset});
      }
      for (const auto& [source, requests] : batches) bytes_read += source->read_all(requests, io).bytes_read;
    }
    for (const Planned& p : plan) {
      StreamPiece piece{p.group, groups[p.group].dtype, p.first, p.count, {}};
      for (size_t side = 0; side < sides; ++side) {
        piece.data.push_back(buffers[side].get() + p.offset);
        const TensorInfo& t = *groups[p.group].sides[side].tensor;
        if (const uint64_t n = t.numel()) stored_done += uint64_t((unsigned __int128)t.nbytes * p.count / n);
      }
      visit(piece);
    }
    if (o.io.progress && !o.io.progress(stored_done, stored_total))
      throw Error(ErrorCode::Cancelled, "cancelled by the progress callback");
  }
  if (o.io.progress) o.io.progress(stored_total, stored_total);
  return bytes_read;
}

}  // namespace wl
