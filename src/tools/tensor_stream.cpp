#include "tools/tensor_stream.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "weightloader/error.hpp"

namespace wl {

namespace {

// A tensor as rows: dim 0 (a 0-d tensor is one row of one element).
struct Rows {
  uint64_t count = 0;
  uint64_t elems = 0;  // per row
};

Rows rows_of(const TensorInfo& t) {
  if (t.shape.empty()) return {1, 1};
  const uint64_t n = t.numel();
  return {t.shape[0], t.shape[0] ? n / t.shape[0] : 0};
}

struct Planned {
  size_t group;
  uint64_t row_begin, row_end, first, count, offset;  // offset: element offset in the window buffer
};

}  // namespace

uint64_t stream_tensors(const std::vector<StreamGroup>& groups, const StreamOptions& o,
                        const std::function<void(const StreamPiece&)>& visit) {
  const size_t sides = groups.empty() ? 0 : groups.front().size();
  const uint64_t esize = dtype_size(o.dtype);
  uint64_t stored_total = 0, stored_done = 0, bytes_read = 0;
  for (const StreamGroup& g : groups) {
    if (g.size() != sides) throw Error(ErrorCode::InvalidArgument, "every group needs the same number of sides");
    for (const StreamTensor& s : g) stored_total += s.tensor->nbytes;
  }
  // The window: the bound, grown to the largest row, shrunk to what the stream holds.
  uint64_t window_elems = std::max<uint64_t>(1, o.window_bytes / esize), largest_row = 1, all = 0;
  for (const StreamGroup& g : groups) {
    largest_row = std::max(largest_row, rows_of(*g.front().tensor).elems);
    all += g.front().tensor->numel();
  }
  window_elems = std::max(largest_row, std::min(window_elems, all));
  std::vector<std::unique_ptr<std::byte[]>> buffers;  // not zeroed: every value is read before it is seen
  for (size_t side = 0; side < sides; ++side) buffers.push_back(std::make_unique_for_overwrite<std::byte[]>(window_elems * esize));
  IoOptions io = o.io;
  io.progress = nullptr;  // reported here, over the whole stream
  io.prefault = false;    // the same buffers every window: touched once, by the first

  size_t group = 0;
  uint64_t row = 0;
  while (group < groups.size()) {
    // Fill one window with runs of rows, as many tensors as fit.
    std::vector<Planned> plan;
    uint64_t used = 0;
    while (group < groups.size()) {
      const Rows r = rows_of(*groups[group].front().tensor);
      if (r.elems == 0 || row >= r.count) {
        if (r.elems == 0 && row == 0) plan.push_back({group, 0, 0, 0, 0, used});  // an empty tensor: seen once
        ++group;
        row = 0;
        continue;
      }
      const uint64_t fit = (window_elems - used) / r.elems;
      if (fit == 0) break;
      const uint64_t take = std::min(fit, r.count - row);
      plan.push_back({group, row, row + take, row * r.elems, take * r.elems, used});
      used += take * r.elems;
      row += take;
    }
    for (size_t side = 0; side < sides; ++side) {
      // One batch per source (a group's sides are usually different checkpoints).
      std::map<const WeightSource*, std::vector<ReadRequest>> batches;
      for (const Planned& p : plan) {
        if (p.count == 0) continue;
        const StreamTensor& s = groups[p.group][side];
        batches[s.source].push_back(
            {s.tensor, Slice{0, p.row_begin, p.row_end}, o.dtype, buffers[side].get() + p.offset * esize});
        if (s.tensor->shape.empty()) batches[s.source].back().slice = {};
      }
      for (const auto& [source, requests] : batches) bytes_read += source->read_all(requests, io).bytes_read;
    }
    for (const Planned& p : plan) {
      StreamPiece piece{p.group, p.first, p.count, {}};
      for (size_t side = 0; side < sides; ++side) {
        piece.data.push_back(buffers[side].get() + p.offset * esize);
        const TensorInfo& t = *groups[p.group][side].tensor;
        const uint64_t n = t.numel();
        if (n) stored_done += t.nbytes * p.count / n;
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
