// The executor: runs a plan (core/io_plan.hpp) on reader threads, through the byte sources'
// capabilities, into a destination.
#include "core/io_engine.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/direct_reads.hpp"
#include "core/io_plan.hpp"
#include "core/expected_digest.hpp"
#include "core/io_way.hpp"
#include "core/named_errors.hpp"
#include "core/ordered_digest.hpp"
#include "core/sigbus_guard.hpp"
#include "core/uring_queue.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

constexpr uint64_t kAlign = ByteSource::direct_alignment();
constexpr uint64_t kHugePage = 2u << 20;

// A thread's scratch memory: staged stored bytes (aligned, so O_DIRECT can read into it), decoded
// blocks when the decoder's output still needs converting, and final values for destinations that
// do not take them in place; in io=uring, the thread's ring.
struct Scratch {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  // O_DIRECT reads into the buffer (direct and uring modes) reach the device as requests cut at its
  // physical pages: a virtio disk takes at most 254 segments a request, so on 4 KiB pages they stay
  // under 1 MiB (about 500 KiB here), on 2 MiB pages they grow to the device's limit (4 MiB here).
  // So there the buffer's whole 2 MiB pages are advised huge (it is the thread's own, at most its
  // share of staging_bytes): a cold 1 GB load took 0.57 s instead of 0.88 (README, issue 33).
  explicit Scratch(bool huge_pages) : huge_pages(huge_pages) {}
  const bool huge_pages;
  std::unique_ptr<std::byte, Free> buf;
  uint64_t capacity = 0;
  std::vector<std::byte> decoded;
  std::vector<std::byte> values;
  std::unique_ptr<UringQueue> ring;  // made on the first read, so that a refusal names its file

  UringQueue& uring(const ByteSource& first) {
    if (!ring) ring = std::make_unique<UringQueue>(kUringDepth, first.name());
    return *ring;
  }
  std::byte* reserve(uint64_t bytes) {
    if (bytes > capacity) {
      const uint64_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
      const bool huge = huge_pages && rounded >= kHugePage;
      void* p = nullptr;
      buf.reset(posix_memalign(&p, huge ? kHugePage : kAlign, rounded) == 0 ? static_cast<std::byte*>(p) : nullptr);
      if (!buf) throw Error(ErrorCode::Io, fmt::format("cannot allocate {} bytes of staging", rounded));
      if (huge) ::madvise(p, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: refused, 4 KiB pages stay
      capacity = rounded;
    }
    return buf.get();
  }
  uint64_t bytes() const { return capacity + decoded.capacity() + values.capacity(); }
};

[[noreturn]] void throw_truncated(const Chunk& c, const ByteSource& source) {
  throw Error(ErrorCode::Truncated,
              fmt::format("ended early: bytes [{}, {}) are no longer in the source (it shrank while loading)",
                          c.src_offset, c.src_offset + c.src_bytes),
              source.name(), c.tensor->name);
}

std::byte* decoded_buffer(const Chunk& c, Scratch& scratch) {
  const Decoder* d = c.tensor->decoder.get();
  if (!d || d->output_dtype() == c.dst_dtype || d->decodes_as(c.dst_dtype)) return nullptr;
  const uint64_t blocks = std::min(c.elems / d->block_elems(), decoded_piece_blocks(*c.tensor));
  scratch.decoded.resize(std::max<size_t>(scratch.decoded.size(), blocks * d->block_elems() * dtype_size(d->output_dtype())));
  return scratch.decoded.data();
}

// Converts or decodes `c.elems` elements of stored bytes at `src` (main parts, then aux parts)
// into `out`. Owns nothing, so it may run under a SIGBUS guard.
void transform(const Chunk& c, const std::byte* src, std::byte* out, std::byte* decoded) {
  const TensorInfo& t = *c.tensor;
  if (!t.decoder) {
    convert(t.dtype, src, c.dst_dtype, out, c.elems);
    return;
  }
  const uint64_t nblocks = c.elems / t.decoder->block_elems();
  if (t.decoder->decodes_as(c.dst_dtype)) {
    t.decoder->decode_as(c.dst_dtype, src, nblocks, out);
    return;
  }
  if (t.decoder->output_dtype() == c.dst_dtype) {
    t.decoder->decode(src, nblocks, out);
    return;
  }
  // Decode and convert a cache-sized piece at a time, so decoded values never leave the cache.
  const uint64_t piece = decoded_piece_blocks(t);
  const uint64_t block_elems = t.decoder->block_elems();
  const size_t out_size = dtype_size(c.dst_dtype);
  for (uint64_t b = 0; b < nblocks; b += piece) {
    const uint64_t n = std::min(piece, nblocks - b);
    t.decoder->decode(src + b * t.decoder->block_bytes(), n, decoded);
    convert(t.decoder->output_dtype(), decoded, c.dst_dtype, out + b * block_elems * out_size, n * block_elems);
  }
}

class Executor {
 public:
  // `digests`: per source, the digest its reads feed (verify=sha256), or null; empty when none.
  Executor(const IoPlan& plan, const std::vector<ByteSource*>& sources, IoMode mode, const Destination& dest,
           const IoOptions& options, const std::vector<std::unique_ptr<OrderedDigest>>& digests, const SideReads* sides)
      : plan_(plan), sources_(sources), mode_(mode), dest_(dest), options_(options), digests_(digests), sides_(sides),
        background_prefault_(reads_direct(mode) || std::all_of(sources.begin(), sources.end(), waits_on_network)),
        prefaulted_(plan.threads) {}

  // Runs every work item on plan.threads threads; returns the staging used at most.
  uint64_t run();
  uint64_t bytes_done() const { return done_.load(); }

 private:
  void worker();
  void run_item(size_t i, Scratch& scratch);
  // Work item i: the side extents, then the gathers, then the other extents.
  const Gather* gather_at(size_t i) const;
  const Extent& extent_at(size_t i) const;
  void side_item_done();
  bool wait_for_sides();
  void run_chunk(const Chunk& c, Scratch& scratch);
  void run_extent(const Chunk* c, const Extent& e, Scratch& scratch);
  void gather_strided(const ReadRequest& r, const ByteSource& source) const;
  void gather_decoded(const ReadRequest& r, const ByteSource& source) const;
  void fetch(const Chunk& c, uint64_t offset, uint64_t length, std::byte* out, Scratch& scratch, uint64_t bounce) const;
  void scatter_read(const Chunk* c, const Extent& e) const;
  void finish(const Chunk& c, const std::byte* src, Scratch& scratch) const;
  const std::byte* staged_values(const Chunk& c, const std::byte* src, Scratch& scratch, bool copy_out) const;
  void hint_ahead(size_t i) const;
  void hand_in(const Chunk& c, const std::byte* data, uint64_t n, bool stable) const;
  void hand_in_staged(const Chunk& c, const std::byte* staged) const;
  void halt();
  const ByteSource& source(const Chunk& c) const { return *sources_[c.source]; }
  // Neither a local file nor memory: each read is a request to a server (an HTTP or S3 object).
  static bool waits_on_network(const ByteSource* s) { return s->kind() == SourceKind::Remote && s->mapping() == nullptr; }

  const IoPlan& plan_;
  const std::vector<ByteSource*>& sources_;
  const IoMode mode_;
  const Destination& dest_;
  const IoOptions& options_;
  const std::vector<std::unique_ptr<OrderedDigest>>& digests_;
  const SideReads* sides_;  // null: no side reads in the plan
  // Reads that wait on a device or a network: page faults are taken meanwhile, on a thread of their
  // own, rather than before the first read.
  const bool background_prefault_;

  std::atomic<size_t> next_prefault_{0}, next_{0};
  std::latch prefaulted_;  // readers wait on it (blocked, not spinning) until the prefault pass is done
  std::atomic<uint64_t> done_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> staging_peak_{0};
  std::atomic<size_t> sides_done_{0};    // side extents finished
  std::atomic<bool> sides_ready_{false};  // all of them, and the waiting decoders prepared (or halted)
  std::mutex mutex_;  // guards error_/cancelled_ and serialises progress callbacks
  std::exception_ptr error_;
  bool cancelled_ = false;
};

// Final values of chunk `c` from its stored bytes at `src`: converted (or copied) straight into
// place, or, for a destination that does not take reads in place, in staging and delivered.
void Executor::finish(const Chunk& c, const std::byte* src, Scratch& scratch) const {
  if (dest_.in_place()) {
    if (c.needs_transform())
      transform(c, src, c.dst, decoded_buffer(c, scratch));
    else
      std::memcpy(c.dst, src, c.src_bytes);
    return;
  }
  dest_.deliver(c.dst, staged_values(c, src, scratch, false), c.elems * dtype_size(c.dst_dtype), c.tensor->name);
}

// Not in place: chunk `c`'s final values, converted into staging, or `src` itself when they are
// its stored bytes (unless `copy_out`: a mapping is copied, so that no delivery reads it).
const std::byte* Executor::staged_values(const Chunk& c, const std::byte* src, Scratch& scratch, bool copy_out) const {
  const uint64_t n = c.elems * dtype_size(c.dst_dtype);
  if (!c.needs_transform() && !copy_out) return src;
  scratch.values.resize(std::max<size_t>(scratch.values.size(), n));
  if (c.needs_transform())
    transform(c, src, scratch.values.data(), decoded_buffer(c, scratch));
  else
    std::memcpy(scratch.values.data(), src, n);
  return scratch.values.data();
}

// [offset, offset + length) of chunk `c`'s source into `out`; in direct and uring modes whatever
// their alignment, through a bounce area of `bounce` bytes at the start of the thread's scratch
// (core/direct_reads.hpp).
void Executor::fetch(const Chunk& c, uint64_t offset, uint64_t length, std::byte* out, Scratch& scratch,
                     uint64_t bounce) const {
  if (reads_direct(mode_)) {
    const ByteSource& f = source(c);
    UringQueue* queue = mode_ == IoMode::Uring ? &scratch.uring(f) : nullptr;
    if (!read_direct_range(f, offset, length, out, [&] { return scratch.reserve(bounce); }, bounce, queue))
      throw_truncated(c, f);
    return;
  }
  try {
    source(c).read_exact(offset, out, length);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Truncated) throw_truncated(c, source(c));
    throw;
  }
}

// One chunk from its source to its destination in the plan's mode.
void Executor::run_chunk(const Chunk& c, Scratch& scratch) {
  const uint64_t stored = c.src_bytes + c.aux_bytes;
  const ByteSource& src = source(c);
  if (mode_ == IoMode::Mmap) {
    const std::byte* map = src.mapping();
    if (c.filler()) {
      hand_in(c, map + c.src_offset, c.src_bytes, true);
      return;
    }
    // Split encodings need their two parts side by side: gather them into staging first.
    std::byte* gathered = c.aux_bytes ? scratch.reserve(stored) : nullptr;
    decoded_buffer(c, scratch);  // allocated here, outside the guard
    if (!dest_.in_place()) scratch.values.resize(std::max<size_t>(scratch.values.size(), c.elems * dtype_size(c.dst_dtype)));
    const std::byte* staged = nullptr;
    const bool ok = guarded([&] {
      const std::byte* from = map + c.src_offset;
      if (gathered) {
        std::memcpy(gathered, from, c.src_bytes);
        std::memcpy(gathered + c.src_bytes, map + c.aux_offset, c.aux_bytes);
        from = gathered;
      }
      if (dest_.in_place())
        finish(c, from, scratch);
      else
        staged = staged_values(c, from, scratch, true);
    });
    if (!ok) throw_truncated(c, src);
    // Delivered outside the guard: a destination may take locks and throw.
    if (staged) dest_.deliver(c.dst, staged, c.elems * dtype_size(c.dst_dtype), c.tensor->name);
    hand_in(c, map + c.src_offset, c.src_bytes, true);  // before the hint, while the pages are still mapped in
    // The mapped pages were only a way through: drop them from this process's RSS (they stay in
    // the page cache), so that a load never holds the file and the parameters at once.
    src.hint(c.src_offset, c.src_bytes, AccessHint::MappedDone);
    if (c.aux_bytes) src.hint(c.aux_offset, c.aux_bytes, AccessHint::MappedDone);
    return;
  }
  if (!c.needs_transform() && dest_.in_place() && !c.filler()) {
    fetch(c, c.src_offset, c.src_bytes, c.dst, scratch, plan_.bounce_bytes);
    hand_in(c, c.dst, c.src_bytes, true);
    return;
  }
  // Staging: the bounce area (direct and uring modes) comes first, then the stored bytes. In direct mode the
  // stored bytes sit at their offset's phase within a block, so that the aligned middle is read in
  // place.
  const uint64_t staged_at = reads_direct(mode_) ? kBounceBytes + c.src_offset % kAlign : 0;
  std::byte* staging = scratch.reserve(staged_at + stored) + staged_at;
  fetch(c, c.src_offset, c.src_bytes, staging, scratch, kBounceBytes);  // only heads and tails bounce now
  if (c.aux_bytes) fetch(c, c.aux_offset, c.aux_bytes, staging + c.src_bytes, scratch, kBounceBytes);
  if (!c.filler()) finish(c, staging, scratch);
  hand_in_staged(c, staging);
}

// Unstaged chunks of one extent: scattered reads straight into their destinations (one preadv from a
// local file, one ranged GET from a remote object, the gaps between chunks read and dropped),
// resumed where a read ends early.
void Executor::scatter_read(const Chunk* c, const Extent& e) const {
  const ByteSource& src = source(c[0]);
  const uint64_t offset = c[0].src_offset;
  std::vector<ReadBuffer> buffers;
  std::vector<size_t> chunk_of;  // the chunk each buffer fills or precedes, for errors
  buffers.reserve(e.count);
  for (size_t i = 0; i < e.count; ++i) {
    if (i > 0 && c[i].src_offset > c[i - 1].src_offset + c[i - 1].src_bytes) {
      buffers.push_back({nullptr, c[i].src_offset - (c[i - 1].src_offset + c[i - 1].src_bytes)});
      chunk_of.push_back(i);
    }
    buffers.push_back({c[i].dst, c[i].src_bytes});
    chunk_of.push_back(i);
  }
  size_t at = 0;
  uint64_t done = 0;
  while (at < buffers.size()) {
    uint64_t n;
    try {
      n = src.read_some_scattered(offset + done, buffers.data() + at, buffers.size() - at);
    } catch (const Error& err) {
      throw Error(err.code(), err.message(), src.name(), c[chunk_of[at]].tensor->name);
    }
    if (n == 0) throw_truncated(c[chunk_of[at]], src);
    done += n;
    for (uint64_t left = n; left > 0 && at < buffers.size();) {  // skip what was filled
      const uint64_t take = std::min(left, buffers[at].length);
      if (buffers[at].data) buffers[at].data = static_cast<std::byte*>(buffers[at].data) + take;
      buffers[at].length -= take;
      left -= take;
      if (buffers[at].length == 0) ++at;
    }
  }
  for (size_t i = 0; i < e.count; ++i) hand_in(c[i], c[i].dst, c[i].src_bytes, true);
}

// Several chunks back to back in one source: scattered straight into place, or one read (O_DIRECT
// in direct mode) into staging, from which each chunk is finished.
void Executor::run_extent(const Chunk* c, const Extent& e, Scratch& scratch) {
  if (!e.staged) {
    scatter_read(c, e);
    return;
  }
  const uint64_t offset = c[0].src_offset;
  const uint64_t staged_at = reads_direct(mode_) ? kBounceBytes + offset % kAlign : 0;
  std::byte* staging = scratch.reserve(staged_at + e.span) + staged_at;
  fetch(c[0], offset, e.span, staging, scratch, kBounceBytes);  // gaps included
  // An extent that holds side chunks finishes them first, then prepares the decoders waiting for them
  // (the planner put all their side chunks here) before it decodes their blocks.
  const bool sides_first = sides_ && std::any_of(c, c + e.count, [](const Chunk& x) { return x.side; });
  for (int pass = sides_first ? 0 : 1; pass < 2; ++pass)
    for (size_t i = 0; i < e.count; ++i) {  // a verified file's extents have no gaps: fillers take them
      if (sides_first && c[i].side != (pass == 0)) continue;
      if (pass == 1 && sides_first && c[i].tensor->decoder) sides_->prepare(c[i].tensor->decoder.get());
      if (!c[i].filler()) finish(c[i], staging + (c[i].src_offset - offset), scratch);
      hand_in_staged(c[i], staging + (c[i].src_offset - offset));
    }
}

// A slice of a one-block tensor: each run of the slice converted into place (or delivered) from the
// block's decoded values. A decoder of row ranges (Decoder::row_elems) decodes only the rows a run
// covers, a piece at a time (a rank's slice of a quantized layer never holds the whole layer
// decoded); any other decodes the block whole into scratch (decoded_rows).
void Executor::gather_decoded(const ReadRequest& r, const ByteSource& source) const {
  const TensorInfo& t = *r.tensor;
  const Decoder& d = *t.decoder;
  const Shape sliced = slice_shape_of(t, r.slice);
  uint64_t outer = 1, inner = 1;
  for (size_t i = 0; i < r.slice.dim; ++i) outer *= t.shape[i];
  for (size_t i = r.slice.dim + 1; i < t.shape.size(); ++i) inner *= t.shape[i];
  const uint64_t run = sliced[r.slice.dim] * inner, stride = r.dst_outer_stride ? r.dst_outer_stride : run;
  std::vector<std::byte> stored(t.nbytes);
  source.read_exact(t.offset, stored.data(), stored.size());
  const size_t in_size = dtype_size(d.output_dtype()), out_size = dtype_size(r.dst_dtype);
  const auto [row, tile_rows] = decoded_rows(t);
  std::vector<std::byte> tile(tile_rows * row * in_size), values(dest_.in_place() ? 0 : run * out_size);
  uint64_t held0 = 0, held1 = 0;  // the rows the tile holds (a whole block is decoded once)
  for (uint64_t o = 0; o < outer; ++o) {
    // The run's elements [a, b) of the block, decoded rows [r0, r1) a tile at a time.
    const uint64_t a = (o * t.shape[r.slice.dim] + r.slice.begin) * inner, b = a + run;
    std::byte* to = static_cast<std::byte*>(r.dst) + o * stride * out_size;
    std::byte* out = dest_.in_place() ? to : values.data();
    for (uint64_t r0 = a / row; r0 * row < b; r0 += tile_rows) {
      const uint64_t r1 = std::min((b + row - 1) / row, r0 + tile_rows);
      if (r0 != held0 || r1 != held1) {
        if (row == t.numel())
          d.decode(stored.data(), 1, tile.data());
        else
          d.decode_block_rows(stored.data(), r0, r1, tile.data());
        held0 = r0, held1 = r1;
      }
      const uint64_t from = std::max(a, r0 * row), until = std::min(b, r1 * row);
      convert(d.output_dtype(), tile.data() + (from - r0 * row) * in_size, r.dst_dtype, out + (from - a) * out_size, until - from);
    }
    if (!dest_.in_place()) dest_.deliver(to, values.data(), values.size(), t.name);
  }
}

void Executor::gather_strided(const ReadRequest& r, const ByteSource& source) const {
  const TensorInfo& t = *r.tensor;
  if (t.decoder) {
    gather_decoded(r, source);
    return;
  }
  const size_t esize = dtype_size(t.dtype);
  const Shape out_shape = slice_shape_of(t, r.slice);
  const uint64_t n = shape_numel(out_shape);
  if (n == 0) return;
  // The stored span covered by the whole tensor (strides are non-negative: checked by the reader).
  uint64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) last += (t.shape[d] - 1) * static_cast<uint64_t>(t.strides[d]);
  std::vector<std::byte> span((last + 1) * esize);
  source.read_exact(t.offset, span.data(), span.size());
  const size_t osize = dtype_size(r.dst_dtype);
  std::vector<std::byte> values(dest_.in_place() ? 0 : n * osize);
  auto* out = dest_.in_place() ? static_cast<std::byte*>(r.dst) : values.data();
  std::vector<uint64_t> idx(out_shape.size(), 0);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      const uint64_t pos = idx[d] + (d == r.slice.dim ? r.slice.begin : 0);
      off += pos * static_cast<uint64_t>(t.strides[d]);
    }
    convert(t.dtype, span.data() + off * esize, r.dst_dtype, out + i * osize, 1);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  if (!dest_.in_place()) dest_.deliver(static_cast<std::byte*>(r.dst), values.data(), values.size(), t.name);
}

// Asks the source to start fetching the extent this thread will probably take next.
void Executor::hint_ahead(size_t i) const {
  const size_t ahead = i + plan_.threads;
  if (ahead >= plan_.work_items() || gather_at(ahead)) return;
  const Extent& e = extent_at(ahead);
  if (e.span < (256u << 10)) return;  // not worth a system call
  const Chunk& c = plan_.chunks[e.first];
  if (mode_ == IoMode::Pread) source(c).hint(c.src_offset, e.span, AccessHint::WillNeed);
  if (mode_ == IoMode::Mmap) source(c).hint(c.src_offset, e.span, AccessHint::MappedWillNeed);
}

// verify=sha256: bytes of chunk `c`'s source from its offset on, to its digest.
void Executor::hand_in(const Chunk& c, const std::byte* data, uint64_t n, bool stable) const {
  if (!digests_.empty() && digests_[c.source]) digests_[c.source]->add(c.src_offset, data, n, stable);
}

// A staged chunk's stored bytes from where they stay put when finish() copied them into place
// unchanged (direct reads), else from staging (the digest copies them if it cannot hash them yet).
void Executor::hand_in_staged(const Chunk& c, const std::byte* staged) const {
  const bool in_place = !c.filler() && !c.needs_transform() && dest_.in_place();
  hand_in(c, in_place ? c.dst : staged, c.src_bytes, in_place);
}

// No more work is taken, and no thread waits on a digest for pieces that will not come.
void Executor::halt() {
  stop_ = true;
  sides_ready_ = true;  // no reader waits for side extents that will not finish
  sides_ready_.notify_all();
  for (const auto& d : digests_)
    if (d) d->abandon();
  for (const ByteSource* s : sources_) s->interrupt_waits();
}

const Gather* Executor::gather_at(size_t i) const {
  const size_t k = plan_.side_extents;
  return i >= k && i < k + plan_.gathers.size() ? &plan_.gathers[i - k] : nullptr;
}

const Extent& Executor::extent_at(size_t i) const {
  return plan_.extents[i < plan_.side_extents ? i : i - plan_.gathers.size()];
}

// The last side extent done: the waiting decoders are prepared, then the other items may run.
void Executor::side_item_done() {
  if (++sides_done_ != plan_.side_extents) return;
  if (sides_) sides_->prepare_all();
  sides_ready_ = true;
  sides_ready_.notify_all();
}

// Items after the side extents wait (blocked) until those are done; every one of them was taken
// before, by a reader that waits on nothing, so the wait ends (or the load halts: false).
bool Executor::wait_for_sides() {
  if (plan_.side_extents == 0) return true;
  sides_ready_.wait(false);
  return !stop_;
}

void Executor::run_item(size_t i, Scratch& scratch) {
  const Gather* g = gather_at(i);
  const TensorInfo& tensor = g ? *g->request->tensor : *plan_.chunks[extent_at(i).first].tensor;
  try {
    if (i >= plan_.side_extents && !wait_for_sides()) return;
    if (g) {
      gather_strided(*g->request, *sources_[g->source]);
      done_ += tensor.nbytes;
      return;
    }
    const Extent& e = extent_at(i);
    if (e.count == 1)
      run_chunk(plan_.chunks[e.first], scratch);
    else
      run_extent(&plan_.chunks[e.first], e, scratch);
    done_ += e.bytes;
    if (i < plan_.side_extents) side_item_done();
  } catch (const Error& e) {
    if (!e.tensor().empty()) throw;
    // A source's own error (an I/O failure) names the source: add the tensor being read.
    Error named(e.code(), e.message(), e.file(), tensor.name);
    named.set_retryable(e.retryable()).set_os_errno(e.os_errno());
    throw named;
  }
}

// Background prefaulting (direct mode, network sources) is left to its own thread; otherwise every reader takes a
// share of the prefault pass and all wait for it, so that no copy takes a page fault.
void Executor::worker() {
  Scratch scratch(reads_direct(mode_));
  try {
    if (!background_prefault_ && !plan_.prefaults.empty()) {
      for (size_t i = next_prefault_++; i < plan_.prefaults.size(); i = next_prefault_++)
        dest_.prefault(plan_.prefaults[i].begin, plan_.prefaults[i].bytes);
      prefaulted_.arrive_and_wait();
    }
    for (size_t i = next_++; i < plan_.work_items() && !stop_; i = next_++) {
      hint_ahead(i);
      run_item(i, scratch);
      if (options_.progress) {
        std::lock_guard lock(mutex_);  // read `done_` under the lock so reports never go backwards
        if (!cancelled_ && !options_.progress(done_.load(), plan_.total_bytes)) {
          cancelled_ = true;
          halt();
        }
      }
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_ && !cancelled_) error_ = std::current_exception();  // a read the cancel interrupted is not the cause
    halt();
  }
  staging_peak_ += scratch.bytes();
}

uint64_t Executor::run() {
  std::jthread prefaulter;
  if (background_prefault_)  // page faults taken while the readers wait on the device or the network
    prefaulter = std::jthread([&] {
      for (size_t i = 0; i < plan_.prefaults.size() && !stop_; ++i)
        dest_.prefault(plan_.prefaults[i].begin, plan_.prefaults[i].bytes);
    });
  if (plan_.threads <= 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(plan_.threads);
    for (unsigned i = 0; i < plan_.threads; ++i) pool.emplace_back([this] { worker(); });
  }
  stop_ = true;  // the prefaulter has nothing left to do once every read is done
  if (prefaulter.joinable()) prefaulter.join();
  try {
    dest_.drain();  // copies still in flight (device memory) complete before anything counts as loaded
  } catch (...) {
    if (!error_) error_ = std::current_exception();
  }
  if (error_) std::rethrow_exception(error_);
  if (cancelled_)
    throw Error(ErrorCode::Cancelled,
                fmt::format("load cancelled by the progress callback after {} of {} bytes", done_.load(), plan_.total_bytes));
  return staging_peak_.load();
}

// Every planned byte must lie inside its source as opened now: a catalogue read from one version
// of a file must not make the engine read past the end of another (nor past a memory region).
void check_bounds(const IoPlan& plan, const std::vector<ByteSource*>& sources) {
  auto check = [&](const TensorInfo& t, size_t source, uint64_t offset, uint64_t bytes) {
    const uint64_t size = sources[source]->size();
    if (offset > size || bytes > size - offset)
      throw Error(ErrorCode::Truncated,
                  fmt::format("bytes [{}, {}) lie past the end of the source, which has {} bytes (it shrank or was "
                              "replaced since its catalogue was read)",
                              offset, offset + bytes, size),
                  sources[source]->name(), t.name);
  };
  for (const Chunk& c : plan.chunks) {
    check(*c.tensor, c.source, c.src_offset, c.src_bytes);
    if (c.aux_bytes) check(*c.tensor, c.source, c.aux_offset, c.aux_bytes);
  }
  for (const Gather& g : plan.gathers) check(*g.request->tensor, g.source, g.request->tensor->offset, g.request->tensor->nbytes);
}

// verify=sha256: what names each source's digest, asked before anything is read.
std::vector<ExpectedDigest> expected_digests(const std::vector<ByteSource*>& sources) {
  std::vector<ExpectedDigest> expected;
  for (const ByteSource* s : sources) {
    std::optional<ExpectedDigest> e = expected_sha256(*s);
    if (!e)
      throw Error(ErrorCode::InvalidArgument,
                  "verify=sha256: nothing names this file's sha256 (it is not a Hugging Face cache blob nor an object "
                  "whose ETag is one, and has no <file>.sha256 beside it nor a line in a SHA256SUMS there)",
                  s->name());
    expected.push_back(std::move(*e));
  }
  return expected;
}

// Every digest against what names it, once every read is done.
void check_digests(const std::vector<std::unique_ptr<OrderedDigest>>& digests, const std::vector<ExpectedDigest>& expected,
                   const std::vector<ByteSource*>& sources) {
  for (size_t i = 0; i < digests.size(); ++i) {
    const ByteSource& s = *sources[i];
    if (digests[i]->hashed() != s.size())
      throw Error(ErrorCode::Truncated,
                  fmt::format("verify=sha256: only {} of its {} bytes could be hashed (it shrank while loading)",
                              digests[i]->hashed(), s.size()),
                  s.name());
    const std::string got = digests[i]->hex();
    if (got != expected[i].hex)
      throw Error(ErrorCode::ChecksumMismatch,
                  fmt::format("verify=sha256: its bytes hash to {}, but {} names {}", got, expected[i].from, expected[i].hex),
                  s.name());
  }
}

}  // namespace

ReadStats run_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                    const Destination& destination, const SideTensorReads* side) {
  const PreparedReads prepared = prepare_reads(requests, files, options, destination.in_place(), true);
  const std::vector<ByteSource*>& sources = prepared.sources;
  ReadStats stats;
  const std::vector<ExpectedDigest> expected = options.verify_sha256 ? expected_digests(sources) : std::vector<ExpectedDigest>{};
  stats.mode = prepared.way.mode;
  stats.mode_reason = prepared.way.reason;
  if (stats.mode == IoMode::Mmap) install_sigbus_handler();  // a file may shrink under its mapping
  if (stats.mode == IoMode::Pread)
    for (const ByteSource* s : sources) s->hint(0, 0, AccessHint::Sequential);
  std::vector<std::unique_ptr<OrderedDigest>> digests;
  if (options.verify_sha256)
    for (const ByteSource* s : sources) digests.push_back(std::make_unique<OrderedDigest>(s->size(), s->name(), options.staging_bytes));
  PlanParams params = prepared.params;
  if (side) {
    params.side = side->is_side;
    for (const ReadRequest& r : requests)
      if (r.tensor->decoder && side->reads.waits(r.tensor->decoder.get())) params.waiting.push_back(r.tensor->decoder.get());
  }
  const IoPlan plan = plan_reads(requests, prepared.source_of, params);
  check_bounds(plan, sources);

  Executor executor(plan, sources, stats.mode, destination, options, digests, side ? &side->reads : nullptr);
  stats.staging_bytes = executor.run();
  for (const ByteSource* s : sources) s->settle();
  check_digests(digests, expected, sources);
  stats.bytes_read = executor.bytes_done();
  stats.threads = plan.threads;
  return stats;
}

}  // namespace wl
