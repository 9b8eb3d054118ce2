// The I/O engine's planner: read requests in, the exact reads out. A pure function of the
// requests and a few numbers (no files, no threads), so every decision it makes is unit-tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// A contiguous run of stored bytes that fills a contiguous run of destination elements.
struct Chunk {
  const TensorInfo* tensor;
  size_t source;        // index into the sources the plan was made for
  uint64_t src_offset;  // absolute, in the source
  uint64_t src_bytes;   // without the aux part of split encodings
  uint64_t elems;       // destination elements
  std::byte* dst;
  DType dst_dtype;
  uint64_t aux_offset;  // split encodings: where the blocks' aux parts are, and their size
  uint64_t aux_bytes;
  bool side = false;    // a side tensor's (PlanParams::side): read before the blocks that need it

  bool needs_transform() const { return tensor->decoder || tensor->dtype != dst_dtype; }
  bool filler() const { return dst == nullptr; }  // read only to be hashed (PlanParams::whole)
};

// A strided (non-contiguous) tensor: its stored span is read whole and gathered. Also a slice of a
// tensor that is one decoder block: decoded whole, the slice copied out.
struct Gather {
  const ReadRequest* request;
  size_t source;
};

// Chunks [first, first + count) that lie back to back in one source, read with one request so
// that read sizes do not depend on tensor sizes (a model's many small tensors would otherwise
// mean many small reads). Where a request costs more than reading the gap between two chunks
// (gap_worth_reading: a remote object, a strided slice such as a rank's columns of a matrix), the
// gap is read too and dropped.
struct Extent {
  size_t first, count;
  uint64_t bytes;  // the chunks' stored bytes
  bool staged;     // read into staging first (direct reads, conversions); else straight into place
  uint64_t span = 0;  // from the first chunk's start to the last one's end: bytes requested, gaps included
};

// A destination range: a request's whole span, or a piece of one to fault in before (or while) reading.
struct PrefaultRange {
  std::byte* begin;
  uint64_t bytes;
};

struct PlanParams {
  IoMode mode = IoMode::Pread;     // resolved: never Auto
  unsigned threads = 1;            // reader threads the executor will run at most
  uint64_t chunk_bytes = 8ull << 20;
  uint64_t staging_bytes = 32ull << 20;  // all threads together
  bool prefault = true;            // fault every destination page in before the reads
  bool in_place = true;            // the destination takes reads straight into place
  std::vector<RequestCost> costs;  // per source (ByteSource::request_cost); a source without one: none
  // verify=sha256, per source: its size when every byte of it is read (and so the digest of its
  // bytes can be computed from the reads), else nullopt.
  std::vector<std::optional<uint64_t>> whole;
  // Side tensors read with the data (core/side_reads.hpp), never with `whole`: side[i] marks request i
  // as one; `waiting` are the decoders whose blocks need them. Empty: none.
  std::vector<char> side;
  std::vector<const Decoder*> waiting;
  // Per source: its name, which the planner's errors give (a source without one: none).
  std::vector<std::string> files;
};

struct IoPlan {
  std::vector<Chunk> chunks;
  std::vector<Gather> gathers;        // run first (after the side extents)
  std::vector<Extent> extents;        // then these, in order
  // Extents [0, side_extents) hold every side chunk: they run first, and the rest only once all of
  // them are done and the waiting decoders prepared. An extent among them that also holds blocks of
  // a waiting decoder holds all that decoder's side chunks too (finished first); elsewhere side
  // chunks and waiting blocks are not merged.
  size_t side_extents = 0;
  std::vector<PrefaultRange> prefaults;  // each request's whole span cut into pieces, when prefaulting
  uint64_t total_bytes = 0;           // stored bytes to read
  unsigned threads = 1;               // threads worth running for this much work
  uint64_t thread_staging = 0;        // each thread's share of the staging bound
  uint64_t bounce_bytes = 0;          // direct and uring modes: a thread's bounce buffer for unaligned pieces
  // Sources read whole: the bytes no request reads (a header, gaps, the aux parts and strided
  // spans read apart) as staged chunks of a U8 "tensor" per source with no destination.
  std::vector<std::shared_ptr<const TensorInfo>> fillers;

  size_t work_items() const { return gathers.size() + extents.size(); }
};

// O_DIRECT reads, one at a time per reader thread (io=direct) or many in flight on its io_uring
// (io=uring): planned alike, with the same chunks, staging and bounce areas.
inline bool reads_direct(IoMode mode) { return mode == IoMode::Direct || mode == IoMode::Uring; }

// Chunk size of staged buffered reads: small enough for the staging to stay in the cache until
// the conversion drains it.
constexpr uint64_t kStagedChunkBytes = 1u << 20;
// Direct and uring modes' bounce area for the unaligned heads and tails of staged reads.
constexpr uint64_t kBounceBytes = 16 * ByteSource::direct_alignment();
// Blocks decoded per piece when a decoder's output still needs converting: about this many bytes.
constexpr uint64_t kDecodedPieceBytes = 64u << 10;
// Destination pieces of the prefault pass.
constexpr uint64_t kPrefaultPieceBytes = 8ull << 20;
// In-place extents stay under each thread's share of a load, but not below this.
constexpr uint64_t kMinExtentBytes = 1ull << 20;

// The cost model for one request against the bytes it wastes: reading `gap` unwanted bytes
// between two wanted ranges within one request is cheaper than a second request when
// gap / bytes_per_s < latency_s. Back-to-back ranges (no gap) always share a request.
bool gap_worth_reading(uint64_t gap, const RequestCost& cost);

// Blocks of `t` decoded per piece (all of them for split encodings, which decode in one go).
uint64_t decoded_piece_blocks(const TensorInfo& t);

// How a slice of a one-block tensor is decoded (IoPlan::gathers): rows of `row` elements, `tile_rows`
// at a time (a piece's worth) where its decoder decodes row ranges (Decoder::row_elems, the last
// dimension); else the whole block as one row.
struct DecodedRows {
  uint64_t row = 0, tile_rows = 1;
};
DecodedRows decoded_rows(const TensorInfo& t);

// Cuts requests into chunks (a multiple of the tensor's block, about chunk_bytes, and when staged
// small enough for the thread's share of staging), sorts permuted rows into file order, merges
// back-to-back chunks of one source into extents (and chunks with a gap between them where
// gap_worth_reading says so for their source's cost), and lists the prefault ranges.
// Sources read whole get filler chunks for the bytes no request reads, and then every extent of
// a source lies in file order (chunks sorted by offset; sources' extents interleaved by offset, so
// that their digests advance side by side). `source_of[i]` is request i's source. Throws SliceOutOfBounds / InvalidArgument naming the
// tensor (and its source, PlanParams::files) for requests that cannot be read.
// With side reads (PlanParams::side), chunks are merged in (source, offset) order and the extents
// that hold side chunks come first (IoPlan::side_extents).
IoPlan plan_reads(const std::vector<ReadRequest>& requests, const std::vector<size_t>& source_of, const PlanParams& params);

// Whether chunk `c` is read into staging rather than straight into place.
bool staged_chunk(const Chunk& c, const PlanParams& p);
// The side extents first (IoPlan::side_extents); an extent that mixes side chunks with blocks of a
// decoder whose side chunks are not all inside it is cut between them (io_plan_sides.cpp).
void order_side_extents(const PlanParams& p, IoPlan& plan);

}  // namespace wl
