#include "core/io_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

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

// Stages one chunk through `staging` (and `decoded` for encoded tensors) into its destination.
void run_chunk(const Chunk& c, std::vector<std::byte>& staging, std::vector<std::byte>& decoded) {
  const TensorInfo& t = *c.tensor;
  if (!t.decoder && t.dtype == c.dst_dtype) {
    c.file->read_exact(c.src_offset, c.dst, c.src_bytes);
    return;
  }
  staging.resize(std::max<size_t>(staging.size(), c.src_bytes + c.aux_bytes));
  c.file->read_exact(c.src_offset, staging.data(), c.src_bytes);
  if (c.aux_bytes) c.file->read_exact(c.aux_offset, staging.data() + c.src_bytes, c.aux_bytes);
  if (!t.decoder) {
    convert(t.dtype, staging.data(), c.dst_dtype, c.dst, c.elems);
    return;
  }
  const DType out = t.decoder->output_dtype();
  const uint64_t nblocks = c.elems / t.decoder->block_elems();
  if (out == c.dst_dtype) {
    t.decoder->decode(staging.data(), nblocks, c.dst);
    return;
  }
  decoded.resize(std::max<size_t>(decoded.size(), c.elems * dtype_size(out)));
  t.decoder->decode(staging.data(), nblocks, decoded.data());
  convert(out, decoded.data(), c.dst_dtype, c.dst, c.elems);
}

}  // namespace

uint64_t stored_bytes_of_slice(const TensorInfo& tensor, const Slice& slice) {
  const Geometry g = slice_geometry(tensor, slice);
  if (!tensor.strides.empty()) return tensor.nbytes;  // strided tensors are read whole
  return stored_bytes_for(tensor, g.outer * g.len * g.inner);
}

ReadStats run_reads(const std::vector<ReadRequest>& requests, FileCache& files, const IoOptions& options) {
  std::vector<Chunk> chunks;
  std::vector<Gather> gathers;
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
    // Chunk size in elements: a multiple of the granule, close to options.chunk_bytes of stored data.
    const uint64_t granule_bytes = stored_bytes_for(t, granule);
    const uint64_t chunk_elems = std::max<uint64_t>(1, options.chunk_bytes / granule_bytes) * granule;
    const size_t out_size = dtype_size(r.dst_dtype);
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
    for (uint64_t o = 0; o < g.outer; ++o)
      emit((o * g.dim + g.begin) * g.inner, run_elems, dst + o * run_elems * out_size);
  }

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t work = chunks.size() + gathers.size();
  const unsigned threads =
      static_cast<unsigned>(std::min<size_t>(options.concurrency ? options.concurrency : hw, std::max<size_t>(1, work)));

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> staging_peak{0};
  std::exception_ptr error;
  std::mutex mutex;  // guards `error` and serialises progress callbacks
  bool cancelled = false;

  auto worker = [&] {
    std::vector<std::byte> staging, decoded;
    try {
      for (size_t i = next++; i < work && !stop; i = next++) {
        uint64_t bytes;
        if (i < gathers.size()) {
          gather_strided(*gathers[i].request, *gathers[i].file);
          bytes = gathers[i].request->tensor->nbytes;
        } else {
          const Chunk& c = chunks[i - gathers.size()];
          run_chunk(c, staging, decoded);
          bytes = c.src_bytes + c.aux_bytes;
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
    staging_peak += staging.capacity() + decoded.capacity();
  };

  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker);
  }
  if (error) std::rethrow_exception(error);
  if (cancelled)
    throw Error(ErrorCode::Cancelled, fmt::format("load cancelled by the progress callback after {} of {} bytes", done.load(), total));
  return {done.load(), threads, staging_peak.load()};
}

}  // namespace wl
