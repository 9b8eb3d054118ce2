#include "core/io_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/sigbus_guard.hpp"
#include "weightloader/convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// A contiguous run of stored bytes that fills a contiguous run of destination elements.
struct Chunk {
  const TensorInfo* tensor;
  File* file;
  uint64_t src_offset;  // absolute, in the file
  uint64_t src_bytes;   // without the aux part of split encodings
  uint64_t elems;       // destination elements
  std::byte* dst;
  DType dst_dtype;
  uint64_t aux_offset;  // split encodings: where the blocks' aux parts are, and their size
  uint64_t aux_bytes;
};

// A strided (non-contiguous) tensor: its stored span is read whole and gathered.
struct Gather {
  const ReadRequest* request;
  File* file;
};

// Chunks [first, first + count) that lie back to back in one file, read with one request so that
// read sizes do not depend on tensor sizes (a model's many small tensors would otherwise mean
// many small reads).
struct Extent {
  size_t first, count;
  uint64_t bytes;
  bool staged;  // read into staging first (direct reads, conversions); else preadv into place
};

uint64_t granule_elems(const TensorInfo& t) { return t.decoder ? t.decoder->block_elems() : 1; }
uint64_t stored_bytes_for(const TensorInfo& t, uint64_t elems) {
  return t.decoder ? elems / t.decoder->block_elems() * t.decoder->block_bytes() : elems * dtype_size(t.dtype);
}
// The part of stored_bytes_for() that a split encoding keeps in its aux region.
uint64_t aux_bytes_for(const TensorInfo& t, uint64_t elems) {
  return t.decoder ? elems / t.decoder->block_elems() * t.decoder->aux_block_bytes() : 0;
}

struct Geometry {
  uint64_t outer = 1, dim = 1, inner = 1, begin = 0, len = 0;
};

Geometry slice_geometry(const TensorInfo& t, const Slice& s) {
  const Shape sliced = WeightSource::slice_shape(t, s);  // validates the slice
  Geometry g;
  if (t.shape.empty()) {
    g.len = 1;
    return g;
  }
  g.dim = t.shape[s.dim];
  g.len = sliced[s.dim];
  g.begin = s.begin;
  for (size_t i = 0; i < s.dim; ++i) g.outer *= t.shape[i];
  for (size_t i = s.dim + 1; i < t.shape.size(); ++i) g.inner *= t.shape[i];
  return g;
}

void gather_strided(const ReadRequest& r, const File& file) {
  const TensorInfo& t = *r.tensor;
  const size_t esize = dtype_size(t.dtype);
  const Shape out_shape = WeightSource::slice_shape(t, r.slice);
  const uint64_t n = shape_numel(out_shape);
  if (n == 0) return;
  // The stored span covered by the whole tensor (strides are non-negative: checked by the reader).
  uint64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) last += (t.shape[d] - 1) * static_cast<uint64_t>(t.strides[d]);
  std::vector<std::byte> span((last + 1) * esize);
  file.read_exact(t.offset, span.data(), span.size());
  std::vector<uint64_t> idx(out_shape.size(), 0);
  auto* out = static_cast<std::byte*>(r.dst);
  const size_t osize = dtype_size(r.dst_dtype);
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
}

// Chunk size of staged buffered reads: small enough for the staging to stay in the cache until
// the conversion drains it.
constexpr uint64_t kStagedChunkBytes = 1u << 20;

// Direct mode's bounce area for the unaligned heads and tails of staged reads.
constexpr uint64_t kBounce = 16 * File::kDirectAlign;

// A thread's scratch memory: staged stored bytes (aligned, so O_DIRECT can read into it), and
// decoded blocks when the decoder's output still needs converting.
struct Scratch {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> buf;
  uint64_t capacity = 0;
  std::vector<std::byte> decoded;

  std::byte* reserve(uint64_t bytes) {
    if (bytes > capacity) {
      const uint64_t rounded = (bytes + File::kDirectAlign - 1) / File::kDirectAlign * File::kDirectAlign;
      buf.reset(static_cast<std::byte*>(std::aligned_alloc(File::kDirectAlign, rounded)));
      if (!buf) throw Error(ErrorCode::Io, fmt::format("cannot allocate {} bytes of staging", rounded));
      capacity = rounded;
    }
    return buf.get();
  }
  uint64_t bytes() const { return capacity + decoded.capacity(); }
};

[[noreturn]] void throw_truncated(const Chunk& c) {
  throw Error(ErrorCode::Truncated,
              fmt::format("file ended early: bytes [{}, {}) are no longer in the file (it shrank while loading)",
                          c.src_offset, c.src_offset + c.src_bytes),
              c.file->path(), c.tensor->name);
}

// O_DIRECT: [offset, offset + length) into `out`, whatever their alignment. The aligned middle is
// read straight into `out` when `out` and `offset` share their offset within a block; the rest
// goes through `bounce` (at least 2 blocks) and is copied.
void read_direct(const Chunk& c, uint64_t offset, uint64_t length, std::byte* out, Scratch& scratch,
                 uint64_t bounce_bytes) {
  constexpr uint64_t A = File::kDirectAlign;
  File& f = *c.file;
  const bool same_phase = (reinterpret_cast<uintptr_t>(out) - offset) % A == 0;
  while (length > 0) {
    if (same_phase && offset % A == 0 && length >= A) {
      const uint64_t n = length / A * A;
      if (f.read_direct(offset, out, n) != n) throw_truncated(c);
      offset += n, out += n, length -= n;
      continue;
    }
    const uint64_t start = offset / A * A, head = offset - start;
    uint64_t piece = std::min(length, bounce_bytes - head);
    if (same_phase) piece = std::min(piece, A - head);  // up to the next block boundary only
    const uint64_t span = (head + piece + A - 1) / A * A;
    std::byte* bounce = scratch.reserve(bounce_bytes);
    if (f.read_direct(start, bounce, span) < head + piece) throw_truncated(c);
    std::memcpy(out, bounce + head, piece);
    offset += piece, out += piece, length -= piece;
  }
}

// Blocks decoded per piece when the decoder's output still needs converting: about kDecodedPiece.
constexpr uint64_t kDecodedPiece = 64u << 10;
uint64_t decoded_piece_blocks(const TensorInfo& t) {
  if (t.decoder->aux_block_bytes() != 0) return UINT64_MAX;  // split blocks decode in one go
  return std::max<uint64_t>(1, kDecodedPiece / (t.decoder->block_elems() * dtype_size(t.decoder->output_dtype())));
}

// Converts or decodes `c.elems` elements of stored bytes at `src` (main parts, then aux parts)
// into the chunk's destination. Owns nothing, so it may run under a SIGBUS guard.
void transform(const Chunk& c, const std::byte* src, std::byte* decoded) {
  const TensorInfo& t = *c.tensor;
  if (!t.decoder) {
    convert(t.dtype, src, c.dst_dtype, c.dst, c.elems);
    return;
  }
  const uint64_t nblocks = c.elems / t.decoder->block_elems();
  if (t.decoder->output_dtype() == c.dst_dtype) {
    t.decoder->decode(src, nblocks, c.dst);
    return;
  }
  // Decode and convert a cache-sized piece at a time, so decoded values never leave the cache.
  const uint64_t piece = decoded_piece_blocks(t);
  const uint64_t block_elems = t.decoder->block_elems();
  const size_t out_size = dtype_size(c.dst_dtype);
  for (uint64_t b = 0; b < nblocks; b += piece) {
    const uint64_t n = std::min(piece, nblocks - b);
    t.decoder->decode(src + b * t.decoder->block_bytes(), n, decoded);
    convert(t.decoder->output_dtype(), decoded, c.dst_dtype, c.dst + b * block_elems * out_size, n * block_elems);
  }
}

bool needs_transform(const Chunk& c) { return c.tensor->decoder || c.tensor->dtype != c.dst_dtype; }

std::byte* decoded_buffer(const Chunk& c, Scratch& scratch) {
  const Decoder* d = c.tensor->decoder.get();
  if (!d || d->output_dtype() == c.dst_dtype) return nullptr;
  const uint64_t blocks = std::min(c.elems / d->block_elems(), decoded_piece_blocks(*c.tensor));
  scratch.decoded.resize(std::max<size_t>(scratch.decoded.size(), blocks * d->block_elems() * dtype_size(d->output_dtype())));
  return scratch.decoded.data();
}

// One chunk from file to destination in the given mode (never Auto).
void run_chunk(const Chunk& c, IoMode mode, Scratch& scratch, uint64_t bounce_bytes) {
  const uint64_t stored = c.src_bytes + c.aux_bytes;
  if (mode == IoMode::Mmap) {
    const std::byte* map = c.file->mapping();
    std::byte* decoded = decoded_buffer(c, scratch);
    // Split encodings need their two parts side by side: gather them into staging first.
    std::byte* gathered = c.aux_bytes ? scratch.reserve(stored) : nullptr;
    const bool ok = guarded([&] {
      const std::byte* src = map + c.src_offset;
      if (gathered) {
        std::memcpy(gathered, src, c.src_bytes);
        std::memcpy(gathered + c.src_bytes, map + c.aux_offset, c.aux_bytes);
        src = gathered;
      }
      if (needs_transform(c))
        transform(c, src, decoded);
      else
        std::memcpy(c.dst, src, c.src_bytes);
    });
    if (!ok) throw_truncated(c);
    // The mapped pages were only a way through: drop them from this process's RSS (they stay in
    // the page cache), so that a load never holds the file and the parameters at once.
    c.file->advise_mapping(c.src_offset, c.src_bytes, MADV_DONTNEED);
    if (c.aux_bytes) c.file->advise_mapping(c.aux_offset, c.aux_bytes, MADV_DONTNEED);
    return;
  }
  auto fetch = [&](uint64_t offset, uint64_t length, std::byte* out) {
    if (mode == IoMode::Direct)
      read_direct(c, offset, length, out, scratch, bounce_bytes);
    else
      c.file->read_exact(offset, out, length);
  };
  if (!needs_transform(c)) {
    fetch(c.src_offset, c.src_bytes, c.dst);
    return;
  }
  // Staging: the bounce area (direct mode) comes first, then the stored bytes.
  // In direct mode the stored bytes sit at their file offset's phase within a block, so that
  // the aligned middle is read in place.
  const uint64_t staged_at = mode == IoMode::Direct ? kBounce + c.src_offset % File::kDirectAlign : 0;
  std::byte* staging = scratch.reserve(staged_at + stored) + staged_at;
  bounce_bytes = kBounce;  // only heads and tails go through it now
  fetch(c.src_offset, c.src_bytes, staging);
  if (c.aux_bytes) fetch(c.aux_offset, c.aux_bytes, staging + c.src_bytes);
  transform(c, staging, decoded_buffer(c, scratch));
}

// Several chunks back to back in one file. Unstaged: one preadv straight into their
// destinations. Staged: one read (O_DIRECT in direct mode) into staging, from which each chunk is
// copied or converted.
void run_extent(const Chunk* c, const Extent& e, IoMode mode, Scratch& scratch) {
  const uint64_t offset = c[0].src_offset;
  if (!e.staged) {
    std::vector<iovec> iov(e.count);
    for (size_t i = 0; i < e.count; ++i) iov[i] = {c[i].dst, c[i].src_bytes};
    size_t at = 0;
    uint64_t done = 0;
    while (at < iov.size()) {
      const ssize_t n = ::preadv(c[0].file->fd(), iov.data() + at, static_cast<int>(iov.size() - at),
                                 static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(ErrorCode::Io, fmt::format("read at offset {} failed: {}", offset + done, std::strerror(errno)), c[0].file->path(), c[0].tensor->name);
      if (n == 0) throw_truncated(c[at]);
      done += static_cast<uint64_t>(n);
      for (uint64_t left = static_cast<uint64_t>(n); left > 0 && at < iov.size();) {  // skip what was filled
        const uint64_t take = std::min<uint64_t>(left, iov[at].iov_len);
        iov[at].iov_base = static_cast<std::byte*>(iov[at].iov_base) + take;
        iov[at].iov_len -= take;
        left -= take;
        if (iov[at].iov_len == 0) ++at;
      }
    }
    return;
  }
  const uint64_t staged_at = mode == IoMode::Direct ? kBounce + offset % File::kDirectAlign : 0;
  std::byte* staging = scratch.reserve(staged_at + e.bytes) + staged_at;
  if (mode == IoMode::Direct)
    read_direct(c[0], offset, e.bytes, staging, scratch, kBounce);
  else
    c[0].file->read_exact(offset, staging, e.bytes);
  for (size_t i = 0; i < e.count; ++i) {
    const std::byte* src = staging + (c[i].src_offset - offset);
    if (needs_transform(c[i]))
      transform(c[i], src, decoded_buffer(c[i], scratch));
    else
      std::memcpy(c[i].dst, src, c[i].src_bytes);
  }
}

// Auto: the page cache is faster than any disk, so pread when most of the files' bytes are
// cached; otherwise O_DIRECT (as fast as buffered reads from disk, without filling the cache
// with a second copy of the weights), unless a file system refuses it.
IoMode choose_mode(const std::vector<File*>& files, std::string& reason) {
  uint64_t size = 0, cached = 0;
  bool direct_ok = true;
  for (File* f : files) {
    size += f->size();
    cached += f->cached_bytes();
    direct_ok = direct_ok && f->direct_fd() >= 0;
  }
  const double frac = size ? double(cached) / double(size) : 1.0;
  const IoMode mode = frac >= 0.5 || !direct_ok ? IoMode::Pread : IoMode::Direct;
  reason = fmt::format("auto: {:.0f}% of the file bytes in the page cache{}", frac * 100,
                       frac < 0.5 && !direct_ok ? ", O_DIRECT refused by the file system" : "");
  return mode;
}

// MADV_POPULATE_WRITE over [p, p + n): the page faults happen here, in parallel, before the reads.
void prefault(std::byte* p, uint64_t n) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);  // a hint: errors ignored
}

}  // namespace

uint64_t stored_bytes_of_slice(const TensorInfo& tensor, const Slice& slice) {
  const Geometry g = slice_geometry(tensor, slice);
  if (!tensor.strides.empty()) return tensor.nbytes;  // strided tensors are read whole
  return stored_bytes_for(tensor, g.outer * g.len * g.inner);
}

ReadStats run_reads(const std::vector<ReadRequest>& requests, FileCache& files, const IoOptions& options) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());

  std::vector<File*> used_files;
  for (const ReadRequest& r : requests) {
    File* file = files.get(r.tensor->file).get();
    if (std::find(used_files.begin(), used_files.end(), file) == used_files.end()) used_files.push_back(file);
  }
  ReadStats stats;
  stats.mode = options.mode;
  if (options.mode == IoMode::Auto) stats.mode = choose_mode(used_files, stats.mode_reason);
  if (stats.mode == IoMode::Direct)
    for (File* f : used_files)
      if (f->direct_fd() < 0)
        throw Error(ErrorCode::Io, "the file system does not support O_DIRECT reads (use io=pread or io=auto)", f->path());
  if (stats.mode == IoMode::Pread)
    for (File* f : used_files) f->advise(0, 0, POSIX_FADV_SEQUENTIAL);
  // Direct reads wait on the device, not the CPU: keep at least 4 requests in flight.
  const unsigned planned = options.concurrency ? options.concurrency : stats.mode == IoMode::Direct ? std::max(4u, hw) : hw;
  // Each thread's share of the staging bound; chunks that need staging are cut to fit it.
  const uint64_t share = options.staging_bytes / planned;
  // What a staged chunk may use of the share: decoded pieces, and in direct mode a bounce area
  // and one block of slack.
  const uint64_t reserved = kDecodedPiece + (stats.mode == IoMode::Direct ? kBounce + File::kDirectAlign : 0);
  const uint64_t room = share > reserved ? share - reserved : 0;

  std::vector<Chunk> chunks;
  std::vector<Gather> gathers;
  std::vector<std::pair<std::byte*, uint64_t>> destinations;
  uint64_t total = 0;
  for (const ReadRequest& r : requests) {
    const TensorInfo& t = *r.tensor;
    File* file = files.get(t.file).get();
    const Geometry g = slice_geometry(t, r.slice);
    if (g.outer * g.len * g.inner == 0) continue;
    if (!t.strides.empty()) {
      if (t.decoder || !t.row_order.empty())
        throw Error(ErrorCode::InvalidArgument, "strided tensors must be raw and in stored row order", t.file, t.name);
      gathers.push_back({&r, file});
      total += t.nbytes;
      continue;
    }
    const uint64_t granule = granule_elems(t);
    const uint64_t run_elems = g.len * g.inner;
    if (run_elems % granule != 0 || (g.begin * g.inner) % granule != 0)
      throw Error(ErrorCode::SliceOutOfBounds,
                  fmt::format("slice [{}, {}) of dim {} does not fall on {}-element block boundaries", g.begin,
                              g.begin + g.len, r.slice.dim, granule),
                  t.file, t.name);
    const size_t out_size = dtype_size(r.dst_dtype);
    destinations.push_back({static_cast<std::byte*>(r.dst), g.outer * run_elems * out_size});
    // Chunk size in elements: a multiple of the granule, close to options.chunk_bytes of stored
    // data, and when staged, small enough for the stored and decoded bytes to fit the thread's share.
    const uint64_t granule_bytes = stored_bytes_for(t, granule);
    uint64_t chunk_granules = std::max<uint64_t>(1, options.chunk_bytes / granule_bytes);
    if (t.decoder || t.dtype != r.dst_dtype) {
      const bool split = t.decoder && t.decoder->aux_block_bytes() != 0 && t.decoder->output_dtype() != r.dst_dtype;
      const uint64_t cost = granule_bytes + (split ? granule * dtype_size(t.decoder->output_dtype()) : 0);
      // Buffered reads: chunks that stay in the cache between the read and the conversion.
      const uint64_t cap = stats.mode == IoMode::Pread ? std::min<uint64_t>(options.chunk_bytes, kStagedChunkBytes) : options.chunk_bytes;
      chunk_granules = std::max<uint64_t>(1, std::min({cap / granule_bytes, room / cost}));
    }
    const uint64_t chunk_elems = chunk_granules * granule;
    auto* dst = static_cast<std::byte*>(r.dst);
    // A run of `n` logical elements from `elem` on; with a row order, rows are remapped one by one.
    const uint64_t row_elems = t.shape.empty() || t.shape[0] == 0 ? 1 : t.numel() / t.shape[0];
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
        chunks.push_back({&t, file, src_offset, src_bytes, len, out + e * out_size, r.dst_dtype,
                          t.aux_offset + aux_bytes_for(t, src_elem), aux_bytes});
        total += src_bytes + aux_bytes;
        e += len;
      }
    };
    const size_t first_chunk = chunks.size();
    for (uint64_t o = 0; o < g.outer; ++o)
      emit((o * g.dim + g.begin) * g.inner, run_elems, dst + o * run_elems * out_size);
    // Permuted rows in file order: rows stored side by side then merge into one read that
    // scatters them to their places.
    if (!t.row_order.empty())
      std::sort(chunks.begin() + static_cast<ptrdiff_t>(first_chunk), chunks.end(),
                [](const Chunk& a, const Chunk& b) { return a.src_offset < b.src_offset; });
  }

  // Destinations cut into pieces for the prefault pass. With prefault=true it runs on all threads
  // before any read; in direct mode one more thread always runs it alongside the reads, in read
  // order, so that page faults are taken while the readers wait on the device.
  constexpr uint64_t kPrefaultPiece = 8ull << 20;
  const bool background_prefault = stats.mode == IoMode::Direct;
  std::vector<std::pair<std::byte*, uint64_t>> prefaults;
  if (options.prefault || background_prefault)
    for (auto [p, n] : destinations)
      for (uint64_t at = 0; at < n; at += kPrefaultPiece) prefaults.push_back({p + at, std::min(kPrefaultPiece, n - at)});

  // Back-to-back chunks of one file merge into extents: up to chunk_bytes when read in place,
  // and when staged, up to what staging allows (for buffered reads, a cache-sized chunk).
  std::vector<Extent> extents;
  const uint64_t staged_limit =
      std::min(room, stats.mode == IoMode::Direct ? options.chunk_bytes : std::min(options.chunk_bytes, kStagedChunkBytes));
  constexpr size_t kMaxMerged = 256;  // well under IOV_MAX
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Chunk& c = chunks[i];
    const bool staged = stats.mode == IoMode::Direct || needs_transform(c);
    if (!extents.empty() && stats.mode != IoMode::Mmap) {
      Extent& e = extents.back();
      const Chunk& last = chunks[i - 1];
      const bool both_staged = e.staged || staged;
      const bool mergeable = c.file == last.file && c.src_offset == last.src_offset + last.src_bytes && !c.aux_bytes &&
                             !last.aux_bytes && e.count < kMaxMerged &&
                             e.bytes + c.src_bytes <= (both_staged ? staged_limit : options.chunk_bytes);
      if (mergeable) {
        ++e.count;
        e.bytes += c.src_bytes;
        e.staged = both_staged;
        continue;
      }
    }
    extents.push_back({i, 1, c.src_bytes + c.aux_bytes, staged});
  }

  const size_t work = extents.size() + gathers.size();
  const unsigned threads = static_cast<unsigned>(std::min<size_t>(planned, std::max<size_t>(1, work)));
  const uint64_t bounce_bytes = std::max<uint64_t>(kBounce, std::min(share, options.chunk_bytes) / File::kDirectAlign * File::kDirectAlign);

  std::atomic<size_t> next_prefault{0}, next{0};
  std::atomic<unsigned> prefaulting{threads};
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> staging_peak{0};
  std::exception_ptr error;
  std::mutex mutex;  // guards `error` and serialises progress callbacks
  bool cancelled = false;

  // Asks the kernel to start reading the chunk this thread will probably take next.
  auto hint_ahead = [&](size_t i) {
    const size_t ahead = i + threads;
    if (ahead < gathers.size() || ahead >= work) return;
    const Extent& e = extents[ahead - gathers.size()];
    if (e.bytes < (256u << 10)) return;  // not worth a system call
    const Chunk& c = chunks[e.first];
    if (stats.mode == IoMode::Pread) c.file->advise(c.src_offset, e.bytes, POSIX_FADV_WILLNEED);
    if (stats.mode == IoMode::Mmap) c.file->advise_mapping(c.src_offset, e.bytes, MADV_WILLNEED);
  };

  auto worker = [&] {
    Scratch scratch;
    try {
      if (!background_prefault) {
        for (size_t i = next_prefault++; i < prefaults.size(); i = next_prefault++) prefault(prefaults[i].first, prefaults[i].second);
        // Reads wait for the whole prefault pass, so that no copy takes a page fault.
        --prefaulting;
        while (prefaulting.load() > 0) std::this_thread::yield();
      }
      for (size_t i = next++; i < work && !stop; i = next++) {
        hint_ahead(i);
        uint64_t bytes;
        if (i < gathers.size()) {
          gather_strided(*gathers[i].request, *gathers[i].file);
          bytes = gathers[i].request->tensor->nbytes;
        } else {
          const Extent& e = extents[i - gathers.size()];
          if (e.count == 1)
            run_chunk(chunks[e.first], stats.mode, scratch, bounce_bytes);
          else
            run_extent(&chunks[e.first], e, stats.mode, scratch);
          bytes = e.bytes;
        }
        done += bytes;
        if (options.progress) {
          std::lock_guard lock(mutex);  // read `done` under the lock so reports never go backwards
          if (!cancelled && !options.progress(done.load(), total)) {
            cancelled = true;
            stop = true;
          }
        }
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
      stop = true;
    }
    staging_peak += scratch.bytes();
  };

  std::jthread prefaulter;
  if (background_prefault)
    prefaulter = std::jthread([&] {
      for (size_t i = 0; i < prefaults.size() && !stop; ++i) prefault(prefaults[i].first, prefaults[i].second);
    });
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker);
  }
  stop = true;  // the prefaulter has nothing left to do once every read is done
  if (prefaulter.joinable()) prefaulter.join();
  if (error) std::rethrow_exception(error);
  if (cancelled)
    throw Error(ErrorCode::Cancelled, fmt::format("load cancelled by the progress callback after {} of {} bytes", done.load(), total));
  stats.bytes_read = done.load();
  stats.threads = threads;
  stats.staging_bytes = staging_peak.load();
  return stats;
}

std::string_view io_mode_name(IoMode mode) {
  switch (mode) {
    case IoMode::Auto: return "auto";
    case IoMode::Mmap: return "mmap";
    case IoMode::Pread: return "pread";
    case IoMode::Direct: return "direct";
  }
  return "?";
}

std::optional<IoMode> parse_io_mode(std::string_view name) {
  for (IoMode m : {IoMode::Auto, IoMode::Mmap, IoMode::Pread, IoMode::Direct})
    if (io_mode_name(m) == name) return m;
  return std::nullopt;
}

}  // namespace wl
