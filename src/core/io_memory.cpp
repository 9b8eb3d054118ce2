#include "core/io_memory.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "core/named_errors.hpp"

namespace wl {
namespace {

constexpr uint64_t kAlign = ByteSource::direct_alignment();

uint64_t aligned(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Besides its buffers, each reader thread touches stack pages and its allocator arena's first heap
// pages, and the load keeps its plan and report: about 80 KiB a thread and 110 KiB in all, measured
// as RSS growth around `weightloader load` at 1 to 8 threads; rounded up.
constexpr uint64_t kThreadBytes = 128 << 10;
constexpr uint64_t kLoadBytes = 256 << 10;

// What one thread's Scratch grows to (each of its buffers only grows), and the mapped pages a
// chunk keeps resident until it is done.
struct ThreadPeak {
  uint64_t staging = 0, decoded = 0, values = 0, mapped = 0;
  uint64_t total() const { return staging + decoded + values + mapped; }
};

// decoded_buffer(): blocks decoded in pieces when the decoder's output still needs converting.
uint64_t decoded_bytes(const Chunk& c) {
  const Decoder* d = c.tensor->decoder.get();
  if (!d || d->output_dtype() == c.dst_dtype || d->decodes_as(c.dst_dtype)) return 0;
  const uint64_t blocks = std::min(c.elems / d->block_elems(), decoded_piece_blocks(*c.tensor));
  return blocks * d->block_elems() * dtype_size(d->output_dtype());
}

// gather_strided / gather_decoded: the whole stored span (and the decoded block, or a tile of its
// rows), then the values.
uint64_t gather_bytes(const ReadRequest& r, bool in_place) {
  const TensorInfo& t = *r.tensor;
  const uint64_t out = in_place ? 0 : shape_numel(slice_shape_of(t, r.slice)) * dtype_size(r.dst_dtype);
  if (t.decoder) {
    const DecodedRows rows = decoded_rows(t);
    return t.nbytes + rows.row * rows.tile_rows * dtype_size(t.decoder->output_dtype()) + out;
  }
  uint64_t last = 0;
  for (size_t d = 0; d < t.shape.size() && d < t.strides.size(); ++d)
    if (t.shape[d]) last += (t.shape[d] - 1) * static_cast<uint64_t>(t.strides[d]);
  return (last + 1) * dtype_size(t.dtype) + out;
}

}  // namespace

uint64_t engine_host_bytes(const IoPlan& plan, const PlanParams& params, const EngineMemory& extra) {
  const bool direct = reads_direct(params.mode), mmap = params.mode == IoMode::Mmap;
  const uint64_t staged_at = direct ? kBounceBytes + kAlign : 0;  // the bounce area before staged bytes
  ThreadPeak peak;
  for (const Extent& e : plan.extents) {
    for (size_t i = e.first; i < e.first + e.count; ++i) {
      const Chunk& c = plan.chunks[i];
      peak.decoded = std::max(peak.decoded, decoded_bytes(c));
      if (!params.in_place) peak.values = std::max(peak.values, c.elems * dtype_size(c.dst_dtype));
    }
    const Chunk& c = plan.chunks[e.first];
    if (mmap) {
      peak.mapped = std::max(peak.mapped, c.src_bytes + c.aux_bytes);
      if (c.aux_bytes) peak.staging = std::max(peak.staging, aligned(c.src_bytes + c.aux_bytes));
    } else if (e.staged) {
      peak.staging = std::max(peak.staging, aligned(staged_at + e.span));
    } else if (direct) {
      peak.staging = std::max(peak.staging, aligned(plan.bounce_bytes));  // unaligned heads and tails
    }
  }
  // Gathers run on the same threads: at most `threads` of the largest at once.
  std::vector<uint64_t> gathers;
  for (const Gather& g : plan.gathers) gathers.push_back(gather_bytes(*g.request, params.in_place));
  std::sort(gathers.begin(), gathers.end(), std::greater<>());
  gathers.resize(std::min<size_t>(gathers.size(), plan.threads));
  uint64_t total = plan.threads * (peak.total() + kThreadBytes + extra.reader_bytes) + kLoadBytes + extra.ring_bytes +
                   extra.digest_bytes;
  for (const uint64_t g : gathers) total += g;
  return total;
}

}  // namespace wl
