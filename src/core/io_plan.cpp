#include "core/io_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/named_errors.hpp"
#include "weightloader/error.hpp"
#include "weightloader/slice_reads.hpp"

namespace wl {

namespace {

uint64_t granule_elems(const TensorInfo& t) { return t.decoder ? t.decoder->block_elems() : 1; }
uint64_t stored_bytes_for(const TensorInfo& t, uint64_t elems) {
  return t.decoder ? elems / t.decoder->block_elems() * t.decoder->block_bytes() : elems * dtype_size(t.dtype);
}
// The part of stored_bytes_for() that a split encoding keeps in its aux region.
uint64_t aux_bytes_for(const TensorInfo& t, uint64_t elems) {
  return t.decoder ? elems / t.decoder->block_elems() * t.decoder->aux_block_bytes() : 0;
}

// A slice seen as `outer` runs of `len` x `inner` elements, `begin` rows into a dimension of
// `dim_size`.
struct SliceRuns {
  uint64_t outer = 1, dim_size = 1, inner = 1, begin = 0, len = 0;
};

SliceRuns slice_runs(const TensorInfo& t, const Slice& s) {
  const Shape sliced = slice_shape_of(t, s);  // validates the slice
  SliceRuns g;
  if (t.shape.empty()) {
    g.len = 1;
    return g;
  }
  g.dim_size = t.shape[s.dim];
  g.len = sliced[s.dim];
  g.begin = s.begin;
  for (size_t i = 0; i < s.dim; ++i) g.outer *= t.shape[i];
  for (size_t i = s.dim + 1; i < t.shape.size(); ++i) g.inner *= t.shape[i];
  return g;
}

// Whether `g` cuts through `t`'s blocks.
bool off_blocks(const TensorInfo& t, const SliceRuns& g) {
  const uint64_t granule = granule_elems(t);
  return (g.len * g.inner) % granule != 0 || (g.begin * g.inner) % granule != 0;
}

// A tensor that is one block (a quantized layer decoded whole) is decoded whole and sliced.
bool decoded_whole(const TensorInfo& t) {
  return t.decoder && granule_elems(t) == t.numel() && t.decoder->aux_block_bytes() == 0 && t.row_order.empty();
}

// Staging one granule of `t` costs its stored bytes, plus decoded values when a split encoding's
// blocks decode in one go before converting.
uint64_t staged_granule_bytes(const TensorInfo& t, DType dst) {
  const bool split = t.decoder && t.decoder->aux_block_bytes() != 0 && t.decoder->output_dtype() != dst;
  return stored_bytes_for(t, granule_elems(t)) + (split ? granule_elems(t) * dtype_size(t.decoder->output_dtype()) : 0);
}

// Appends the chunks of one request; its errors name the tensor (plan_reads adds the source).
void plan_request(const ReadRequest& r, size_t source, bool side, const PlanParams& p, uint64_t staging_room, IoPlan& plan) {
  const TensorInfo& t = *r.tensor;
  const SliceRuns g = slice_runs(t, r.slice);
  if (g.outer * g.len * g.inner == 0) return;
  if (side && (!t.strides.empty() || t.decoder || !t.row_order.empty()))
    throw Error(ErrorCode::InvalidArgument, "a decoder's side tensor must be raw, contiguous and in stored row order", {}, t.name);
  if (!t.strides.empty()) {
    if (r.dst_outer_stride)
      throw Error(ErrorCode::UnsupportedLayout, "a strided tensor cannot be read into a strided destination", {}, t.name);
    if (t.decoder || !t.row_order.empty())
      throw Error(ErrorCode::InvalidArgument, "strided tensors must be raw and in stored row order", {}, t.name);
    plan.gathers.push_back({&r, source});
    plan.total_bytes += t.nbytes;
    return;
  }
  const uint64_t granule = granule_elems(t);
  const uint64_t run_elems = g.len * g.inner;
  const bool cuts_blocks = off_blocks(t, g);
  if (cuts_blocks && decoded_whole(t)) {
    plan.gathers.push_back({&r, source});
    plan.total_bytes += t.nbytes;
    return;
  }
  if (cuts_blocks)
    throw Error(ErrorCode::SliceOutOfBounds,
                fmt::format("slice [{}, {}) of dim {} does not fall on {}-element block boundaries", g.begin,
                            g.begin + g.len, r.slice.dim, granule),
                {}, t.name);
  const size_t out_size = dtype_size(r.dst_dtype);
  auto* dst = static_cast<std::byte*>(r.dst);
  const uint64_t stride = r.dst_outer_stride ? r.dst_outer_stride : run_elems;
  if (stride < run_elems)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("destination stride {} is shorter than the slice's runs of {} elements", stride, run_elems), {}, t.name);
  const uint64_t dst_bytes = ((g.outer - 1) * stride + run_elems) * out_size;  // the span, other blocks' gaps included
  if (p.prefault || reads_direct(p.mode))
    for (uint64_t at = 0; at < dst_bytes; at += kPrefaultPieceBytes)
      plan.prefaults.push_back({dst + at, std::min(kPrefaultPieceBytes, dst_bytes - at)});

  // Chunk size in elements: a multiple of the granule, close to chunk_bytes of stored data, and
  // when staged, small enough for the stored and decoded bytes to fit the thread's share.
  const uint64_t granule_bytes = stored_bytes_for(t, granule);
  uint64_t chunk_granules = std::max<uint64_t>(1, p.chunk_bytes / granule_bytes);
  if (t.decoder || t.dtype != r.dst_dtype || !p.in_place) {
    // Buffered reads: chunks that stay in the cache between the read and the conversion.
    const uint64_t limit = p.mode == IoMode::Pread ? std::min(p.chunk_bytes, kStagedChunkBytes) : p.chunk_bytes;
    chunk_granules = std::max<uint64_t>(1, std::min(limit / granule_bytes, staging_room / staged_granule_bytes(t, r.dst_dtype)));
  }
  const uint64_t chunk_elems = chunk_granules * granule;
  // A run of `n` logical elements from `elem` on; with a row order, rows are remapped one by one.
  const uint64_t row_elems = t.shape.empty() || t.shape[0] == 0 ? 1 : t.numel() / t.shape[0];
  const size_t first_chunk = plan.chunks.size();
  auto emit = [&](uint64_t elem, uint64_t n, std::byte* out) {
    for (uint64_t e = 0; e < n;) {
      uint64_t src_elem = elem + e, len = std::min(chunk_elems, n - e);
      if (!t.row_order.empty()) {
        const uint64_t row = src_elem / row_elems, within = src_elem % row_elems;
        len = std::min(len, row_elems - within);
        src_elem = t.row_order[row] * row_elems + within;
      }
      const uint64_t aux_bytes = aux_bytes_for(t, len);
      const uint64_t src_bytes = stored_bytes_for(t, len) - aux_bytes;
      const uint64_t src_offset = t.offset + stored_bytes_for(t, src_elem) - aux_bytes_for(t, src_elem);
      plan.chunks.push_back({&t, source, src_offset, src_bytes, len, out + e * out_size, r.dst_dtype,
                             t.aux_offset + aux_bytes_for(t, src_elem), aux_bytes, side});
      plan.total_bytes += src_bytes + aux_bytes;
      e += len;
    }
  };
  for (uint64_t o = 0; o < g.outer; ++o) emit((o * g.dim_size + g.begin) * g.inner, run_elems, dst + o * stride * out_size);
  // Permuted rows in file order: rows stored side by side then merge into one read that scatters
  // them to their places.
  if (!t.row_order.empty())
    std::sort(plan.chunks.begin() + static_cast<ptrdiff_t>(first_chunk), plan.chunks.end(),
              [](const Chunk& a, const Chunk& b) { return a.src_offset < b.src_offset; });
}

// The bytes of each source read whole that no chunk's main part covers, as staged chunks without
// a destination; then every chunk in (source, offset) order.
void plan_fillers(const std::vector<ReadRequest>& requests, const std::vector<size_t>& source_of, const PlanParams& p,
                  uint64_t staging_room, IoPlan& plan) {
  const uint64_t piece = std::max<uint64_t>(
      ByteSource::direct_alignment(),
      std::min(staging_room, p.mode == IoMode::Pread ? std::min(p.chunk_bytes, kStagedChunkBytes) : p.chunk_bytes));
  for (size_t s = 0; s < p.whole.size(); ++s) {
    if (!p.whole[s]) continue;
    std::vector<std::pair<uint64_t, uint64_t>> covered;  // [begin, end)
    for (const Chunk& c : plan.chunks)
      if (c.source == s) covered.emplace_back(c.src_offset, c.src_offset + c.src_bytes);
    std::sort(covered.begin(), covered.end());
    covered.emplace_back(*p.whole[s], *p.whole[s]);
    auto filler = std::make_shared<TensorInfo>();
    const auto r = std::find(source_of.begin(), source_of.end(), s);
    if (r != source_of.end()) filler->source = requests[static_cast<size_t>(r - source_of.begin())].tensor->source;
    filler->name = "(bytes outside the tensors, read for verify=sha256)";
    filler->dtype = DType::U8;
    uint64_t at = 0;
    for (const auto& [begin, end] : covered) {
      for (; at < begin; at += std::min(piece, begin - at)) {
        const uint64_t n = std::min(piece, begin - at);
        plan.chunks.push_back({filler.get(), s, at, n, n, nullptr, DType::U8, 0, 0});
        plan.total_bytes += n;
      }
      at = std::max(at, end);
    }
    plan.fillers.push_back(std::move(filler));
  }
  std::stable_sort(plan.chunks.begin(), plan.chunks.end(), [](const Chunk& a, const Chunk& b) {
    return a.source != b.source ? a.source < b.source : a.src_offset < b.src_offset;
  });
}

// Chunks of one source merge into extents: back to back, or with a gap that costs less to read
// than a request does (gap_worth_reading); up to chunk_bytes requested when read in place (and not
// above each thread's share of the load, so that every thread gets reads), and when staged, up to
// what staging allows (for buffered reads, a cache-sized chunk).
void merge_extents(const PlanParams& p, uint64_t staging_room, unsigned threads, IoPlan& plan) {
  const uint64_t staged_limit =
      std::min(staging_room, reads_direct(p.mode) ? p.chunk_bytes : std::min(p.chunk_bytes, kStagedChunkBytes));
  const uint64_t in_place_limit = std::min(p.chunk_bytes, std::max<uint64_t>(kMinExtentBytes, plan.total_bytes / threads));
  constexpr size_t kMaxMerged = 256;  // well under IOV_MAX, for sources read without gaps (preadv)
  const std::vector<Chunk>& chunks = plan.chunks;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Chunk& c = chunks[i];
    const bool staged = staged_chunk(c, p);
    if (!plan.extents.empty() && p.mode != IoMode::Mmap) {
      Extent& e = plan.extents.back();
      const Chunk& last = chunks[i - 1];
      const bool both_staged = e.staged || staged;
      const uint64_t end = last.src_offset + last.src_bytes;
      const RequestCost cost = c.source < p.costs.size() ? p.costs[c.source] : RequestCost{};
      const bool gaps = cost.latency_s > 0;  // read through gaps: no preadv, no limit on pieces
      const bool mergeable = c.source == last.source && c.src_offset >= end && gap_worth_reading(c.src_offset - end, cost) &&
                             !c.aux_bytes && !last.aux_bytes && (gaps || e.count < kMaxMerged) &&
                             e.span + (c.src_offset - end) + c.src_bytes <= (both_staged ? staged_limit : in_place_limit);
      if (mergeable) {
        ++e.count;
        e.bytes += c.src_bytes;
        e.span += c.src_offset - end + c.src_bytes;
        e.staged = both_staged;
        continue;
      }
    }
    plan.extents.push_back({i, 1, c.src_bytes + c.aux_bytes, staged, c.src_bytes + c.aux_bytes});
  }
}

}  // namespace

bool reads_slice(const TensorInfo& tensor, const Slice& slice) {
  const SliceRuns g = slice_runs(tensor, slice);
  return !tensor.strides.empty() || g.outer * g.len * g.inner == 0 || !off_blocks(tensor, g) || decoded_whole(tensor);
}

bool staged_chunk(const Chunk& c, const PlanParams& p) {
  return reads_direct(p.mode) || c.needs_transform() || !p.in_place || c.filler();
}

bool gap_worth_reading(uint64_t gap, const RequestCost& cost) {
  return gap == 0 || static_cast<double>(gap) < cost.latency_s * cost.bytes_per_s;
}

uint64_t decoded_piece_blocks(const TensorInfo& t) {
  if (t.decoder->aux_block_bytes() != 0) return UINT64_MAX;
  return std::max<uint64_t>(1, kDecodedPieceBytes / (t.decoder->block_elems() * dtype_size(t.decoder->output_dtype())));
}

DecodedRows decoded_rows(const TensorInfo& t) {
  const Decoder& d = *t.decoder;
  if (!d.row_elems() || t.shape.empty() || d.row_elems() != t.shape.back()) return {t.numel(), 1};
  return {d.row_elems(), std::max<uint64_t>(1, kDecodedPieceBytes / (d.row_elems() * dtype_size(d.output_dtype())))};
}

IoPlan plan_reads(const std::vector<ReadRequest>& requests, const std::vector<size_t>& source_of, const PlanParams& p) {
  IoPlan plan;
  const unsigned planned = std::max(1u, p.threads);
  plan.thread_staging = p.staging_bytes / planned;
  // What a staged chunk may use of the share: decoded pieces, and in direct mode a bounce area
  // and one block of slack.
  const uint64_t reserved =
      kDecodedPieceBytes + (reads_direct(p.mode) ? kBounceBytes + ByteSource::direct_alignment() : 0);
  const uint64_t staging_room = plan.thread_staging > reserved ? plan.thread_staging - reserved : 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const size_t s = source_of[i];
    naming_file(s < p.files.size() ? p.files[s] : std::string(),
                [&] { plan_request(requests[i], s, i < p.side.size() && p.side[i], p, staging_room, plan); });
  }
  const bool whole = std::any_of(p.whole.begin(), p.whole.end(), [](const auto& size) { return size.has_value(); });
  if (whole) plan_fillers(requests, source_of, p, staging_room, plan);
  // Side reads in file order among the data, so that a layer's packed weight and the scales stored
  // beside it merge into one read, and each file's scales into one another.
  if (!whole && std::any_of(p.side.begin(), p.side.end(), [](char s) { return s != 0; }))
    std::stable_sort(plan.chunks.begin(), plan.chunks.end(), [](const Chunk& a, const Chunk& b) {
      return a.source != b.source ? a.source < b.source : a.src_offset < b.src_offset;
    });
  merge_extents(p, staging_room, planned, plan);
  if (!whole) order_side_extents(p, plan);
  if (whole)
    std::stable_sort(plan.extents.begin(), plan.extents.end(), [&](const Extent& a, const Extent& b) {
      return plan.chunks[a.first].src_offset < plan.chunks[b.first].src_offset;
    });
  plan.threads = static_cast<unsigned>(std::min<size_t>(planned, std::max<size_t>(1, plan.work_items())));
  constexpr uint64_t A = ByteSource::direct_alignment();
  plan.bounce_bytes = std::max<uint64_t>(kBounceBytes, std::min(plan.thread_staging, p.chunk_bytes) / A * A);
  return plan;
}

}  // namespace wl
