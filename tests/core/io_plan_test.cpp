// The I/O planner on its own: requests in, chunks, extents, gathers and prefault ranges out. No
// file is opened; sources are the indices given with the requests and the destinations are local buffers.
#include "core/io_plan.hpp"
#include "weightloader/slice_reads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// An encoding of `elems` elements in `bytes` stored bytes per block, the last `aux` of them kept
// in a second region. The planner never decodes: decode() is not called.
class TestDecoder final : public Decoder {
 public:
  TestDecoder(uint64_t elems, uint64_t bytes, uint64_t aux = 0) : elems_(elems), bytes_(bytes), aux_(aux) {}
  std::string name() const override { return "T" + std::to_string(elems_) + "x" + std::to_string(bytes_); }
  uint64_t block_elems() const override { return elems_; }
  uint64_t block_bytes() const override { return bytes_; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte*, uint64_t, void*) const override { ADD_FAILURE() << "the planner decoded"; }
  uint64_t aux_block_bytes() const override { return aux_; }

 private:
  uint64_t elems_, bytes_, aux_;
};

TensorInfo raw(const std::string& name, DType dtype, Shape shape, uint64_t offset = 0, SourceIndex source = 0) {
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.source = source;
  t.offset = offset;
  t.nbytes = t.numel() * dtype_size(dtype);
  return t;
}

// A tensor of `shape` encoded with `decoder` (4 elements in 3 bytes by default).
TensorInfo encoded(const std::string& name, Shape shape, uint64_t offset = 0,
                   std::shared_ptr<const Decoder> decoder = std::make_shared<TestDecoder>(4, 3)) {
  TensorInfo t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.offset = offset;
  t.nbytes = t.numel() / decoder->block_elems() * decoder->block_bytes();
  t.decoder = std::move(decoder);
  return t;
}

// Destination memory that is never touched by the planner (nor by these tests).
struct Dest {
  explicit Dest(uint64_t bytes) : mem(new std::byte[bytes ? bytes : 1]) {}
  std::byte* get() const { return mem.get(); }
  std::unique_ptr<std::byte[]> mem;
};

PlanParams params(IoMode mode = IoMode::Pread, unsigned threads = 1, uint64_t chunk = 8ull << 20) {
  PlanParams p;
  p.mode = mode;
  p.threads = threads;
  p.chunk_bytes = chunk;
  return p;
}

std::vector<size_t> all_from(size_t n, size_t source = 0) { return std::vector<size_t>(n, source); }

uint64_t chunk_sum(const IoPlan& plan) {
  uint64_t sum = 0;
  for (const Chunk& c : plan.chunks) sum += c.src_bytes + c.aux_bytes;
  return sum;
}

// The extents take the chunks in order, each one exactly once, and their bytes are their chunks'.
void expect_extents_partition_chunks(const IoPlan& plan) {
  size_t next = 0;
  for (const Extent& e : plan.extents) {
    EXPECT_EQ(e.first, next);
    ASSERT_GE(e.count, 1u);
    uint64_t bytes = 0;
    for (size_t i = e.first; i < e.first + e.count; ++i) bytes += plan.chunks[i].src_bytes + plan.chunks[i].aux_bytes;
    EXPECT_EQ(e.bytes, bytes);
    next = e.first + e.count;
  }
  EXPECT_EQ(next, plan.chunks.size());
}

// The chunks of one contiguous request in order: they fill its destination without gaps or
// overlaps, and read its stored bytes front to back.
void expect_chunks_fill(const IoPlan& plan, const TensorInfo& t, DType dst_dtype, const std::byte* dst) {
  uint64_t elems = 0, src = t.offset;
  for (const Chunk& c : plan.chunks) {
    if (c.tensor != &t) continue;
    EXPECT_EQ(c.dst, dst + elems * dtype_size(dst_dtype));
    EXPECT_EQ(c.src_offset, src);
    EXPECT_EQ(c.dst_dtype, dst_dtype);
    elems += c.elems;
    src += c.src_bytes;
  }
  EXPECT_EQ(elems, t.numel());
  EXPECT_EQ(src, t.offset + t.nbytes);
}

TEST(IoPlan, RawChunksStayWithinChunkBytes) {
  const TensorInfo t = raw("w", DType::F32, {100, 10}, 16);  // 4000 bytes
  Dest out(t.nbytes);
  const std::vector<ReadRequest> reqs = {{&t, {}, DType::F32, out.get()}};
  const IoPlan plan = plan_reads(reqs, all_from(1), params(IoMode::Pread, 1, 1000));
  ASSERT_EQ(plan.chunks.size(), 4u);
  for (const Chunk& c : plan.chunks) {
    EXPECT_LE(c.src_bytes, 1000u);
    EXPECT_EQ(c.src_bytes, c.elems * 4);
    EXPECT_FALSE(c.needs_transform());
  }
  expect_chunks_fill(plan, t, DType::F32, out.get());
  EXPECT_EQ(plan.total_bytes, t.nbytes);
}

TEST(IoPlan, EncodedChunksAreWholeBlocksWithinChunkBytes) {
  const TensorInfo t = encoded("q", {8, 64}, 5);  // 128 blocks, 384 bytes
  Dest out(t.numel() * 4);
  const std::vector<ReadRequest> reqs = {{&t, {}, DType::F32, out.get()}};
  for (uint64_t chunk : {50u, 64u, 100u, 383u, 4096u}) {
    SCOPED_TRACE(chunk);
    const IoPlan plan = plan_reads(reqs, all_from(1), params(IoMode::Pread, 1, chunk));
    ASSERT_FALSE(plan.chunks.empty());
    for (const Chunk& c : plan.chunks) {
      EXPECT_LE(c.src_bytes, chunk);
      EXPECT_EQ(c.elems % 4, 0u);
      EXPECT_EQ(c.src_bytes % 3, 0u);
      EXPECT_EQ(c.src_bytes, c.elems / 4 * 3);
      EXPECT_TRUE(c.needs_transform());
    }
    expect_chunks_fill(plan, t, DType::F32, out.get());
    EXPECT_EQ(plan.total_bytes, t.nbytes);
    EXPECT_EQ(plan.total_bytes, chunk_sum(plan));
  }
}

TEST(IoPlan, AChunkIsNeverSmallerThanOneBlock) {
  const TensorInfo t = encoded("q", {4, 8});  // 8 blocks of 3 bytes
  Dest out(t.numel() * 4);
  const std::vector<ReadRequest> reqs = {{&t, {}, DType::F32, out.get()}};
  for (uint64_t chunk : {0u, 1u, 2u}) {
    const IoPlan plan = plan_reads(reqs, all_from(1), params(IoMode::Pread, 1, chunk));
    ASSERT_EQ(plan.chunks.size(), 8u) << chunk;
    for (const Chunk& c : plan.chunks) EXPECT_EQ(c.elems, 4u);
    expect_chunks_fill(plan, t, DType::F32, out.get());
  }
}

TEST(IoPlan, BackToBackChunksOfOneSourceMergeUpToChunkBytes) {
  // Three 400-byte tensors side by side in one file.
  std::vector<TensorInfo> ts;
  for (int i = 0; i < 3; ++i) ts.push_back(raw("t" + std::to_string(i), DType::F32, {100}, 64 + 400 * uint64_t(i)));
  Dest out(1200);
  std::vector<ReadRequest> reqs;
  for (int i = 0; i < 3; ++i) reqs.push_back({&ts[size_t(i)], {}, DType::F32, out.get() + 400 * i});
  const IoPlan plan = plan_reads(reqs, all_from(3), params(IoMode::Pread, 4, 1000));
  ASSERT_EQ(plan.chunks.size(), 3u);
  ASSERT_EQ(plan.extents.size(), 2u);
  EXPECT_EQ(plan.extents[0].count, 2u);
  EXPECT_EQ(plan.extents[0].bytes, 800u);
  EXPECT_EQ(plan.extents[1].count, 1u);
  EXPECT_FALSE(plan.extents[0].staged);
  for (const Extent& e : plan.extents) EXPECT_LE(e.bytes, 1000u);
  expect_extents_partition_chunks(plan);
  // Room for all three: one read.
  const IoPlan wide = plan_reads(reqs, all_from(3), params(IoMode::Pread, 4, 1200));
  ASSERT_EQ(wide.extents.size(), 1u);
  EXPECT_EQ(wide.extents[0].count, 3u);
  EXPECT_EQ(wide.extents[0].bytes, 1200u);
  EXPECT_EQ(wide.threads, 1u);  // one work item
}

TEST(IoPlan, MergedExtentsLeaveEveryThreadAShare) {
  // Eight 1 MiB tensors side by side: with requests of up to 32 MiB (a remote source's), one thread
  // reads them in one extent, four threads in four of 2 MiB.
  constexpr uint64_t MiB = 1 << 20;
  std::vector<TensorInfo> ts;
  for (uint64_t i = 0; i < 8; ++i) ts.push_back(raw("t" + std::to_string(i), DType::F32, {MiB / 4}, i * MiB));
  Dest out(8 * MiB);
  std::vector<ReadRequest> reqs;
  for (uint64_t i = 0; i < 8; ++i) reqs.push_back({&ts[i], {}, DType::F32, out.get() + i * MiB});
  const IoPlan one = plan_reads(reqs, all_from(8), params(IoMode::Pread, 1, 32 * MiB));
  ASSERT_EQ(one.extents.size(), 1u);
  EXPECT_EQ(one.extents[0].bytes, 8 * MiB);
  const IoPlan four = plan_reads(reqs, all_from(8), params(IoMode::Pread, 4, 32 * MiB));
  ASSERT_EQ(four.extents.size(), 4u);
  for (const Extent& e : four.extents) EXPECT_EQ(e.bytes, 2 * MiB);
  EXPECT_EQ(four.threads, 4u);
  expect_extents_partition_chunks(four);
}

TEST(IoPlan, ChunksOfDifferentSourcesNeverMerge) {
  // Offsets that would be back to back if they were in the same file.
  const TensorInfo a = raw("a", DType::F32, {10}, 0, 0), b = raw("b", DType::F32, {10}, 40, 1);
  Dest out(80);
  const std::vector<ReadRequest> reqs = {{&a, {}, DType::F32, out.get()}, {&b, {}, DType::F32, out.get() + 40}};
  const IoPlan plan = plan_reads(reqs, {0, 1}, params(IoMode::Pread, 2, 1 << 20));
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].source, 0u);
  EXPECT_EQ(plan.chunks[1].source, 1u);
  ASSERT_EQ(plan.extents.size(), 2u);
  expect_extents_partition_chunks(plan);
  // The same requests from one source do merge.
  EXPECT_EQ(plan_reads(reqs, {0, 0}, params(IoMode::Pread, 2, 1 << 20)).extents.size(), 1u);
}

TEST(IoPlan, AGapPreventsMerging) {
  const TensorInfo a = raw("a", DType::F32, {10}, 0), b = raw("b", DType::F32, {10}, 44);  // 4 bytes between
  Dest out(80);
  const std::vector<ReadRequest> reqs = {{&a, {}, DType::F32, out.get()}, {&b, {}, DType::F32, out.get() + 40}};
  const IoPlan plan = plan_reads(reqs, all_from(2), params(IoMode::Pread, 1, 1 << 20));
  EXPECT_EQ(plan.extents.size(), 2u);
  expect_extents_partition_chunks(plan);
}

TEST(IoPlan, AGapIsReadThroughWhenItCostsLessThanARequest) {
  // 20 ms a request at 100 MB/s: reading 2 MB of gap costs as much as a request.
  const RequestCost object_store{0.020, 100e6};
  EXPECT_TRUE(gap_worth_reading(0, object_store));
  EXPECT_TRUE(gap_worth_reading(516, object_store));
  EXPECT_TRUE(gap_worth_reading(1'999'999, object_store));
  EXPECT_FALSE(gap_worth_reading(2'000'000, object_store));
  EXPECT_FALSE(gap_worth_reading(50'000'000, object_store));
  // Loopback: 50 us a request at 1 GB/s: 50 KB.
  EXPECT_TRUE(gap_worth_reading(49'999, RequestCost{50e-6, 1e9}));
  EXPECT_FALSE(gap_worth_reading(50'001, RequestCost{50e-6, 1e9}));
  // A local file: requests cost nothing, so only back-to-back ranges share one.
  EXPECT_TRUE(gap_worth_reading(0, RequestCost{}));
  EXPECT_FALSE(gap_worth_reading(1, RequestCost{}));
  EXPECT_FALSE(gap_worth_reading(1, RequestCost{0.020, 0}));
}

// One rank's quarter of the columns of a [64, 172] F32 matrix (down_proj at tp 4): 64 runs of 172
// bytes, 516 bytes apart.
struct ColumnSlice {
  TensorInfo t = raw("w2", DType::F32, {64, 172}, 100);
  Dest out{64 * 43 * 4};
  std::vector<ReadRequest> reqs{{&t, Slice{1, 43, 86}, DType::F32, out.get()}};
  static constexpr uint64_t kRun = 43 * 4, kRow = 172 * 4;
  static constexpr uint64_t kSpan = 63 * kRow + kRun;  // first run's start to the last one's end
};

TEST(IoPlan, AStridedSliceIsOneRequestWhereRequestsCostMoreThanItsGaps) {
  ColumnSlice s;
  PlanParams p = params(IoMode::Pread, 8, 32 << 20);
  // A local file (no cost given): one read per run, nothing read that is not wanted.
  const IoPlan local = plan_reads(s.reqs, all_from(1), p);
  ASSERT_EQ(local.extents.size(), 64u);
  for (const Extent& e : local.extents) EXPECT_EQ(e.span, ColumnSlice::kRun);
  // A remote object: one request over the 64 runs and their 63 gaps.
  p.costs = {RequestCost{0.020, 100e6}};
  const IoPlan remote = plan_reads(s.reqs, all_from(1), p);
  ASSERT_EQ(remote.extents.size(), 1u);
  EXPECT_EQ(remote.extents[0].count, 64u);
  EXPECT_EQ(remote.extents[0].bytes, 64 * ColumnSlice::kRun);  // what is kept
  EXPECT_EQ(remote.extents[0].span, ColumnSlice::kSpan);       // what is requested
  EXPECT_FALSE(remote.extents[0].staged);
  EXPECT_EQ(remote.total_bytes, local.total_bytes);
  expect_extents_partition_chunks(remote);
  // A request cheaper than a gap (5 us at 100 MB/s: 500 bytes < 516): apart again.
  p.costs = {RequestCost{5e-6, 100e6}};
  EXPECT_EQ(plan_reads(s.reqs, all_from(1), p).extents.size(), 64u);
  // Another source's cost does not apply.
  p.costs = {RequestCost{}, RequestCost{0.020, 100e6}};
  EXPECT_EQ(plan_reads(s.reqs, all_from(1), p).extents.size(), 64u);
}

TEST(IoPlan, ReadThroughGapsCountAgainstTheRequestSize) {
  ColumnSlice s;
  PlanParams p = params(IoMode::Pread, 1, 8000);  // requests of at most 8000 bytes, gaps included
  p.costs = {RequestCost{0.020, 100e6}};
  const IoPlan plan = plan_reads(s.reqs, all_from(1), p);
  ASSERT_GT(plan.extents.size(), 1u);
  for (const Extent& e : plan.extents) {
    EXPECT_LE(e.span, 8000u);
    const Chunk& first = plan.chunks[e.first];
    const Chunk& last = plan.chunks[e.first + e.count - 1];
    EXPECT_EQ(e.span, last.src_offset + last.src_bytes - first.src_offset);
  }
  expect_extents_partition_chunks(plan);
  // Staged (converted) pieces: the gaps come into staging too, and fit the thread's share.
  s.reqs[0].dst_dtype = DType::BF16;
  p = params(IoMode::Pread, 1, 32 << 20);
  p.costs = {RequestCost{0.020, 100e6}};
  p.staging_bytes = kDecodedPieceBytes + 10000;
  const IoPlan staged = plan_reads(s.reqs, all_from(1), p);
  ASSERT_GT(staged.extents.size(), 1u);
  for (const Extent& e : staged.extents) {
    EXPECT_TRUE(e.staged);
    EXPECT_LE(e.span, 10000u);
  }
  expect_extents_partition_chunks(staged);
}

TEST(IoPlan, MappedReadsAreNotMerged) {
  const TensorInfo a = raw("a", DType::F32, {10}, 0), b = raw("b", DType::F32, {10}, 40);
  Dest out(80);
  const std::vector<ReadRequest> reqs = {{&a, {}, DType::F32, out.get()}, {&b, {}, DType::F32, out.get() + 40}};
  const IoPlan plan = plan_reads(reqs, all_from(2), params(IoMode::Mmap, 1, 1 << 20));
  EXPECT_EQ(plan.extents.size(), 2u);
  expect_extents_partition_chunks(plan);
}

TEST(IoPlan, SplitEncodedChunksNeverMerge) {
  // 4 elements per block in 6 bytes, 2 of them in the aux region.
  auto split = std::make_shared<TestDecoder>(4, 6, 2);
  TensorInfo a = encoded("a", {2, 8}, 0, split), b = encoded("b", {2, 8}, 16, split);
  a.aux_offset = 1000;
  b.aux_offset = 1008;
  Dest out(2 * 16 * 4);
  const std::vector<ReadRequest> reqs = {{&a, {}, DType::F32, out.get()}, {&b, {}, DType::F32, out.get() + 64}};
  const IoPlan plan = plan_reads(reqs, all_from(2), params(IoMode::Pread, 1, 1 << 20));
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.extents.size(), 2u);
  for (const Chunk& c : plan.chunks) {
    EXPECT_EQ(c.src_bytes, c.elems / 4 * 4);  // the main parts
    EXPECT_EQ(c.aux_bytes, c.elems / 4 * 2);
  }
  EXPECT_EQ(plan.chunks[0].src_offset, 0u);
  EXPECT_EQ(plan.chunks[0].aux_offset, 1000u);
  EXPECT_EQ(plan.chunks[1].src_offset, 16u);
  EXPECT_EQ(plan.chunks[1].aux_offset, 1008u);
  EXPECT_EQ(plan.total_bytes, a.nbytes + b.nbytes);
  EXPECT_EQ(plan.total_bytes, chunk_sum(plan));
  expect_extents_partition_chunks(plan);
}

TEST(IoPlan, SplitEncodedSlicesFindBothParts) {
  auto split = std::make_shared<TestDecoder>(4, 6, 2);
  TensorInfo t = encoded("t", {3, 8}, 100, split);  // 6 blocks: main parts at 100, aux parts at 500
  t.aux_offset = 500;
  Dest out(3 * 4 * 4);
  const std::vector<ReadRequest> reqs = {{&t, Slice{1, 4, 8}, DType::F32, out.get()}};
  const IoPlan plan = plan_reads(reqs, all_from(1), params(IoMode::Pread, 1, 1 << 20));
  ASSERT_EQ(plan.chunks.size(), 3u);
  for (uint64_t r = 0; r < 3; ++r) {
    const Chunk& c = plan.chunks[r];
    const uint64_t block = r * 2 + 1;  // the second block of each row
    EXPECT_EQ(c.src_offset, 100 + block * 4);
    EXPECT_EQ(c.aux_offset, 500 + block * 2);
    EXPECT_EQ(c.elems, 4u);
    EXPECT_EQ(c.dst, out.get() + r * 16);
  }
}

// Staged chunks (conversion, direct mode, a destination that does not take reads in place) fit
// each thread's share of the staging bound less what is reserved for decoding and bouncing.
struct StagedCase {
  const char* what;
  IoMode mode;
  DType dst;
  bool in_place;
  uint64_t reserved;
};

TEST(IoPlan, StagedChunksFitTheThreadsShareOfStaging) {
  constexpr uint64_t kRoom = 4000;
  constexpr uint64_t kDirectReserved = kDecodedPieceBytes + kBounceBytes + ByteSource::direct_alignment();
  const StagedCase cases[] = {
      {"F32 to BF16", IoMode::Pread, DType::BF16, true, kDecodedPieceBytes},
      {"direct, F32 to BF16", IoMode::Direct, DType::BF16, true, kDirectReserved},
      {"not in place", IoMode::Pread, DType::F32, false, kDecodedPieceBytes},
      {"direct, not in place", IoMode::Direct, DType::F32, false, kDirectReserved},
  };
  const TensorInfo t = raw("w", DType::F32, {100, 100}, 12);  // 40000 bytes
  Dest out(t.numel() * 4);
  for (const StagedCase& c : cases) {
    SCOPED_TRACE(c.what);
    for (unsigned threads : {1u, 3u}) {
      PlanParams p = params(c.mode, threads, 1 << 20);
      p.in_place = c.in_place;
      p.staging_bytes = threads * (c.reserved + kRoom);
      const std::vector<ReadRequest> reqs = {{&t, {}, c.dst, out.get()}};
      const IoPlan plan = plan_reads(reqs, all_from(1), p);
      EXPECT_EQ(plan.thread_staging, p.staging_bytes / threads);
      ASSERT_GT(plan.chunks.size(), 1u);
      for (const Chunk& ch : plan.chunks) EXPECT_LE(ch.src_bytes, plan.thread_staging - c.reserved);
      for (const Extent& e : plan.extents) {
        EXPECT_TRUE(e.staged);
        EXPECT_LE(e.bytes, plan.thread_staging - c.reserved);
      }
      expect_chunks_fill(plan, t, c.dst, out.get());
      expect_extents_partition_chunks(plan);
    }
  }
}

// Direct reads of many small tensors merge into staged extents, and those fit the staging share;
// buffered reads of the same tensors merge straight into place up to chunk_bytes.
TEST(IoPlan, DirectExtentsFitTheStagingShare) {
  constexpr uint64_t kRoom = 4000;
  std::vector<TensorInfo> ts;
  for (uint64_t i = 0; i < 100; ++i) ts.push_back(raw("t" + std::to_string(i), DType::F32, {100}, 4096 + 400 * i));
  Dest out(100 * 400);
  std::vector<ReadRequest> reqs;
  for (size_t i = 0; i < ts.size(); ++i) reqs.push_back({&ts[i], {}, DType::F32, out.get() + 400 * i});
  PlanParams p = params(IoMode::Direct, 2, 1 << 20);
  p.staging_bytes = 2 * (kDecodedPieceBytes + kBounceBytes + ByteSource::direct_alignment() + kRoom);
  const IoPlan direct = plan_reads(reqs, all_from(reqs.size()), p);
  ASSERT_EQ(direct.chunks.size(), 100u);
  EXPECT_GT(direct.extents.size(), 1u);
  for (const Extent& e : direct.extents) {
    EXPECT_TRUE(e.staged);
    EXPECT_LE(e.bytes, kRoom);
  }
  EXPECT_GT(direct.extents[0].count, 1u);
  expect_extents_partition_chunks(direct);
  p.mode = IoMode::Pread;
  const IoPlan buffered = plan_reads(reqs, all_from(reqs.size()), p);
  ASSERT_EQ(buffered.extents.size(), 1u);
  EXPECT_FALSE(buffered.extents[0].staged);
  EXPECT_EQ(buffered.extents[0].bytes, 40000u);
}

TEST(IoPlan, UnstagedChunksIgnoreTheStagingBound) {
  const TensorInfo t = raw("w", DType::F32, {100, 100});  // 40000 bytes
  Dest out(t.nbytes);
  PlanParams p = params(IoMode::Pread, 1, 20000);
  p.staging_bytes = kDecodedPieceBytes + 100;  // 100 bytes of room
  const IoPlan plan = plan_reads({{&t, {}, DType::F32, out.get()}}, all_from(1), p);
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].src_bytes, 20000u);
  EXPECT_FALSE(plan.extents[0].staged);
}

TEST(IoPlan, BufferedStagedChunksStayCacheSized) {
  // Plenty of staging, large chunks: a buffered conversion still works in cache-sized pieces.
  const TensorInfo t = raw("w", DType::F32, {3 << 18});  // 3 MiB
  Dest out(t.numel() * 2);
  PlanParams p = params(IoMode::Pread, 1, 8ull << 20);
  p.staging_bytes = 256ull << 20;
  const IoPlan plan = plan_reads({{&t, {}, DType::BF16, out.get()}}, all_from(1), p);
  ASSERT_GE(plan.chunks.size(), 3u);
  for (const Chunk& c : plan.chunks) EXPECT_LE(c.src_bytes, kStagedChunkBytes);
  for (const Extent& e : plan.extents) EXPECT_LE(e.bytes, kStagedChunkBytes);
  expect_chunks_fill(plan, t, DType::BF16, out.get());
}

TEST(IoPlan, NoStagingRoomStillReadsOneBlockAtATime) {
  const TensorInfo t = encoded("q", {2, 8});  // 4 blocks
  Dest out(t.numel() * 2);
  PlanParams p = params(IoMode::Pread, 2, 1 << 20);
  p.staging_bytes = 0;
  const IoPlan plan = plan_reads({{&t, {}, DType::BF16, out.get()}}, all_from(1), p);
  EXPECT_EQ(plan.thread_staging, 0u);
  ASSERT_EQ(plan.chunks.size(), 4u);
  for (const Chunk& c : plan.chunks) EXPECT_EQ(c.elems, 4u);
  expect_chunks_fill(plan, t, DType::BF16, out.get());
}

TEST(IoPlan, SplitEncodingsStageTheirDecodedValuesToo) {
  // Staged granule of a split encoding converting on the way: 6 stored bytes + 4 decoded F32.
  auto split = std::make_shared<TestDecoder>(4, 6, 2);
  TensorInfo t = encoded("t", {4, 64}, 0, split);  // 64 blocks
  t.aux_offset = 4096;
  Dest out(t.numel() * 4);
  constexpr uint64_t kRoom = 220;
  PlanParams p = params(IoMode::Pread, 1, 1 << 20);
  p.staging_bytes = kDecodedPieceBytes + kRoom;
  for (DType dst : {DType::BF16, DType::F32}) {
    SCOPED_TRACE(std::string(dtype_name(dst)));
    const IoPlan plan = plan_reads({{&t, {}, dst, out.get()}}, all_from(1), p);
    const uint64_t decoded_per_block = dst == DType::F32 ? 0 : 4 * 4;
    uint64_t elems = 0;
    for (const Chunk& c : plan.chunks) {
      EXPECT_EQ(c.elems % 4, 0u);
      EXPECT_LE(c.src_bytes + c.aux_bytes + c.elems / 4 * decoded_per_block, kRoom);
      elems += c.elems;
    }
    EXPECT_EQ(elems, t.numel());
    EXPECT_EQ(plan.total_bytes, t.nbytes);
  }
}

TEST(IoPlan, PermutedRowsAreReadInFileOrderAndMerge) {
  TensorInfo t = raw("w", DType::F32, {4, 3}, 8);
  t.row_order = {2, 0, 3, 1};  // logical row i is stored row row_order[i]
  Dest out(t.nbytes);
  const IoPlan plan = plan_reads({{&t, {}, DType::F32, out.get()}}, all_from(1), params(IoMode::Pread, 1, 1 << 20));
  ASSERT_EQ(plan.chunks.size(), 4u);
  for (size_t i = 1; i < plan.chunks.size(); ++i) EXPECT_LT(plan.chunks[i - 1].src_offset, plan.chunks[i].src_offset);
  for (uint64_t logical = 0; logical < 4; ++logical) {
    const uint64_t stored = t.row_order[logical];
    const Chunk& c = plan.chunks[stored];  // sorted by offset: chunk k holds stored row k
    EXPECT_EQ(c.src_offset, 8 + stored * 12);
    EXPECT_EQ(c.dst, out.get() + logical * 12);
    EXPECT_EQ(c.elems, 3u);
  }
  // Stored side by side: one read that scatters the rows.
  ASSERT_EQ(plan.extents.size(), 1u);
  EXPECT_EQ(plan.extents[0].bytes, t.nbytes);
  EXPECT_EQ(plan.total_bytes, t.nbytes);
}

TEST(IoPlan, PermutedRowsOfASliceAndOfSmallChunks) {
  TensorInfo t = raw("w", DType::F32, {4, 6});
  t.row_order = {3, 1, 0, 2};
  Dest out(t.nbytes);
  // Logical rows 1 and 2 are stored rows 1 and 0: read in file order.
  const IoPlan slice = plan_reads({{&t, Slice{0, 1, 3}, DType::F32, out.get()}}, all_from(1), params());
  ASSERT_EQ(slice.chunks.size(), 2u);
  EXPECT_EQ(slice.chunks[0].src_offset, 0u);
  EXPECT_EQ(slice.chunks[0].dst, out.get() + 24);  // stored row 0 is logical row 2, the slice's second
  EXPECT_EQ(slice.chunks[1].src_offset, 24u);
  EXPECT_EQ(slice.chunks[1].dst, out.get());
  // Chunks smaller than a row: still sorted, still within chunk_bytes.
  const IoPlan small = plan_reads({{&t, {}, DType::F32, out.get()}}, all_from(1), params(IoMode::Pread, 1, 16));
  ASSERT_GE(small.chunks.size(), 8u);
  for (size_t i = 1; i < small.chunks.size(); ++i) EXPECT_LT(small.chunks[i - 1].src_offset, small.chunks[i].src_offset);
  for (const Chunk& c : small.chunks) EXPECT_LE(c.src_bytes, 16u);
  EXPECT_EQ(chunk_sum(small), t.nbytes);
}

TEST(IoPlan, SlicesOffBlockBoundariesThrowNamingTheTensor) {
  const TensorInfo t = encoded("blocks.weight", {2, 8});
  Dest out(64);
  PlanParams named = params();
  named.files = {"q.bin"};  // the source's name, which the planner's errors give
  for (const Slice& s : {Slice{1, 2, 6}, Slice{1, 0, 6}, Slice{1, 1, 5}}) {
    EXPECT_FALSE(reads_slice(t, s));  // the same rule, asked before any plan
    try {
      plan_reads({{&t, s, DType::F32, out.get()}}, all_from(1), named);
      ADD_FAILURE() << "slice [" << s.begin << ", " << s.end << ") was planned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::SliceOutOfBounds) << e.what();
      EXPECT_EQ(e.tensor(), "blocks.weight");
      EXPECT_EQ(e.file(), "q.bin");
    }
  }
  // On the boundaries it plans: the second block of each row.
  EXPECT_TRUE(reads_slice(t, Slice{1, 4, 8}));
  EXPECT_TRUE(reads_slice(t, Slice{0, 1, 2}));
  EXPECT_TRUE(reads_slice(raw("w", DType::F32, {3, 10}), Slice{1, 3, 7}));  // raw data slices anywhere
  const IoPlan plan = plan_reads({{&t, Slice{1, 4, 8}, DType::F32, out.get()}}, all_from(1), params());
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].src_offset, 3u);
  EXPECT_EQ(plan.chunks[1].src_offset, 9u);
  EXPECT_EQ(plan.chunks[1].dst, out.get() + 16);
  // Whole rows of dim 0 are whole blocks too.
  EXPECT_EQ(plan_reads({{&t, Slice{0, 1, 2}, DType::F32, out.get()}}, all_from(1), params()).chunks.at(0).src_offset, 6u);
  // A slice outside the tensor is refused as well.
  const std::string msg = test::expect_error(ErrorCode::SliceOutOfBounds, [&] {
    plan_reads({{&t, Slice{2, 0, 1}, DType::F32, out.get()}}, all_from(1), params());
  });
  EXPECT_NE(msg.find("blocks.weight"), std::string::npos) << msg;
}

TEST(IoPlan, ColumnSlicesReadOneRunPerRow) {
  const TensorInfo t = raw("w", DType::F32, {3, 10}, 100);
  Dest out(3 * 3 * 2);
  const IoPlan plan = plan_reads({{&t, Slice{1, 2, 5}, DType::BF16, out.get()}}, all_from(1), params());
  ASSERT_EQ(plan.chunks.size(), 3u);
  for (uint64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(plan.chunks[r].src_offset, 100 + (r * 10 + 2) * 4);
    EXPECT_EQ(plan.chunks[r].src_bytes, 12u);
    EXPECT_EQ(plan.chunks[r].dst, out.get() + r * 3 * 2);
  }
  EXPECT_EQ(plan.total_bytes, 36u);
}

TEST(IoPlan, StridedTensorsBecomeGathers) {
  TensorInfo t = raw("t", DType::F32, {3, 4});
  t.strides = {1, 3};  // column-major
  TensorInfo plain = raw("p", DType::F32, {4}, t.nbytes);
  Dest out(12 * 4 + 16);
  const std::vector<ReadRequest> reqs = {{&t, {}, DType::F32, out.get()}, {&plain, {}, DType::F32, out.get() + 48}};
  const IoPlan plan = plan_reads(reqs, {2, 5}, params(IoMode::Pread, 4));
  ASSERT_EQ(plan.gathers.size(), 1u);
  EXPECT_EQ(plan.gathers[0].request, &reqs[0]);
  EXPECT_EQ(plan.gathers[0].source, 2u);
  ASSERT_EQ(plan.chunks.size(), 1u);
  EXPECT_EQ(plan.chunks[0].tensor, &plain);
  EXPECT_EQ(plan.chunks[0].source, 5u);
  EXPECT_EQ(plan.total_bytes, t.nbytes + plain.nbytes);
  EXPECT_EQ(plan.work_items(), 2u);
  EXPECT_EQ(plan.threads, 2u);
}

TEST(IoPlan, StridedTensorsMustBeRawAndInStoredOrder) {
  TensorInfo enc = encoded("enc", {2, 8});
  enc.strides = {8, 1};
  TensorInfo perm = raw("perm", DType::F32, {2, 2});
  perm.strides = {1, 2};
  perm.row_order = {1, 0};
  Dest out(64);
  for (const TensorInfo* t : {&enc, &perm}) {
    try {
      plan_reads({{t, {}, DType::F32, out.get()}}, all_from(1), params());
      ADD_FAILURE() << t->name << " was planned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_EQ(e.tensor(), t->name);
    }
  }
}

TEST(IoPlan, ZeroElementRequestsPlanNothing) {
  const TensorInfo empty = raw("empty", DType::F32, {0, 4});
  TensorInfo strided_empty = raw("se", DType::F32, {3, 0});
  strided_empty.strides = {1, 3};
  const TensorInfo w = raw("w", DType::F32, {4, 4});
  Dest out(64);
  const std::vector<ReadRequest> reqs = {{&empty, {}, DType::F32, out.get()},
                                         {&strided_empty, {}, DType::BF16, out.get()},
                                         {&w, Slice{0, 2, 2}, DType::F32, out.get()},
                                         {&w, Slice{1, 4, 4}, DType::BF16, out.get()}};
  for (bool prefault : {true, false}) {
    PlanParams p = params(IoMode::Direct, 8);
    p.prefault = prefault;
    const IoPlan plan = plan_reads(reqs, all_from(reqs.size()), p);
    EXPECT_TRUE(plan.chunks.empty());
    EXPECT_TRUE(plan.gathers.empty());
    EXPECT_TRUE(plan.extents.empty());
    EXPECT_TRUE(plan.prefaults.empty());
    EXPECT_EQ(plan.total_bytes, 0u);
    EXPECT_EQ(plan.threads, 1u);
  }
  EXPECT_EQ(plan_reads({}, {}, params(IoMode::Pread, 8)).threads, 1u);
}

TEST(IoPlan, TotalBytesIsTheSumOfTheChunks) {
  // A mix: raw, converted, sliced, encoded, split-encoded, permuted.
  auto split = std::make_shared<TestDecoder>(4, 6, 2);
  std::vector<TensorInfo> ts;
  ts.push_back(raw("a", DType::F32, {7, 9}, 0));
  ts.push_back(raw("b", DType::F16, {33}, 252));
  ts.push_back(encoded("c", {6, 16}, 400));
  ts.push_back(encoded("d", {2, 32}, 1000, split));
  ts.back().aux_offset = 2000;
  ts.push_back(raw("e", DType::BF16, {5, 3}, 3000));
  ts.back().row_order = {4, 2, 0, 1, 3};
  Dest out(4096);
  const std::vector<ReadRequest> reqs = {{&ts[0], {}, DType::BF16, out.get()},
                                         {&ts[1], {}, DType::F32, out.get() + 256},
                                         {&ts[2], Slice{1, 4, 12}, DType::F32, out.get() + 512},
                                         {&ts[3], {}, DType::F32, out.get() + 1024},
                                         {&ts[4], Slice{0, 1, 4}, DType::F32, out.get() + 2048}};
  for (uint64_t chunk : {7u, 24u, 100u, 1u << 20}) {
    SCOPED_TRACE(chunk);
    const IoPlan plan = plan_reads(reqs, all_from(reqs.size()), params(IoMode::Pread, 3, chunk));
    EXPECT_EQ(plan.total_bytes, chunk_sum(plan));
    // Each request's stored bytes: whole a, b, d; half the columns of c; three rows of e.
    EXPECT_EQ(plan.total_bytes, ts[0].nbytes + ts[1].nbytes + ts[2].nbytes / 2 + ts[3].nbytes + 3 * 3 * 2);
    expect_extents_partition_chunks(plan);
    uint64_t extent_bytes = 0;
    for (const Extent& e : plan.extents) extent_bytes += e.bytes;
    EXPECT_EQ(extent_bytes, plan.total_bytes);
  }
}

// The prefault ranges of one request, in order, tile [dst, dst + bytes) exactly.
void expect_prefaults_cover(const IoPlan& plan, const std::byte* dst, uint64_t bytes) {
  uint64_t covered = 0;
  for (const PrefaultRange& r : plan.prefaults) {
    if (r.begin < dst || r.begin >= dst + bytes) continue;
    EXPECT_EQ(r.begin, dst + covered);
    EXPECT_GT(r.bytes, 0u);
    EXPECT_LE(r.bytes, kPrefaultPieceBytes);
    covered += r.bytes;
  }
  EXPECT_EQ(covered, bytes);
}

TEST(IoPlan, PrefaultRangesCoverEachDestinationExactly) {
  const TensorInfo big = raw("big", DType::F32, {5ull << 20});  // 20 MiB: three pieces
  const TensorInfo small = raw("small", DType::F32, {6, 10}, big.nbytes);
  const uint64_t big_out = big.nbytes, small_out = 6 * 4 * 2;  // small: 4 columns as BF16
  Dest out(big_out + 4096 + small_out);
  std::byte* small_dst = out.get() + big_out + 4096;
  const std::vector<ReadRequest> reqs = {{&big, {}, DType::F32, out.get()}, {&small, Slice{1, 3, 7}, DType::BF16, small_dst}};
  PlanParams p = params(IoMode::Pread, 2);
  p.prefault = true;
  const IoPlan plan = plan_reads(reqs, all_from(2), p);
  uint64_t total = 0;
  for (const PrefaultRange& r : plan.prefaults) total += r.bytes;
  EXPECT_EQ(total, big_out + small_out);
  expect_prefaults_cover(plan, out.get(), big_out);
  expect_prefaults_cover(plan, small_dst, small_out);
  EXPECT_EQ(plan.prefaults.size(), 4u);  // 8 + 8 + 4 MiB, then the small one

  p.prefault = false;
  EXPECT_TRUE(plan_reads(reqs, all_from(2), p).prefaults.empty());
  // Direct reads prefault whatever the setting: the faults are taken while the readers wait.
  p.mode = IoMode::Direct;
  const IoPlan direct = plan_reads(reqs, all_from(2), p);
  expect_prefaults_cover(direct, out.get(), big_out);
  expect_prefaults_cover(direct, small_dst, small_out);
}

TEST(IoPlan, ThreadsNeverExceedTheWorkItems) {
  std::vector<TensorInfo> ts;
  for (int i = 0; i < 10; ++i) ts.push_back(raw("t" + std::to_string(i), DType::F32, {16}, 1000 * uint64_t(i)));  // gaps
  Dest out(10 * 64);
  std::vector<ReadRequest> reqs;
  for (int i = 0; i < 10; ++i) reqs.push_back({&ts[size_t(i)], {}, DType::F32, out.get() + 64 * i});
  for (unsigned threads : {0u, 1u, 2u, 7u, 10u, 64u}) {
    for (size_t n : {0u, 1u, 3u, 10u}) {
      const std::vector<ReadRequest> some(reqs.begin(), reqs.begin() + static_cast<ptrdiff_t>(n));
      const IoPlan plan = plan_reads(some, all_from(n), params(IoMode::Pread, threads));
      EXPECT_EQ(plan.work_items(), n);
      EXPECT_GE(plan.threads, 1u);
      EXPECT_LE(plan.threads, std::max<size_t>(1, plan.work_items()));
      EXPECT_LE(plan.threads, std::max(1u, threads));
      EXPECT_EQ(plan.threads, std::min<size_t>(std::max(1u, threads), std::max<size_t>(1, n)));
    }
  }
}

TEST(IoPlan, StagingIsSharedAmongThePlannedThreads) {
  const TensorInfo t = raw("w", DType::F32, {4});
  Dest out(16);
  for (unsigned threads : {0u, 1u, 4u, 16u}) {
    PlanParams p = params(IoMode::Pread, threads);
    p.staging_bytes = 32ull << 20;
    const IoPlan plan = plan_reads({{&t, {}, DType::F32, out.get()}}, all_from(1), p);
    EXPECT_EQ(plan.thread_staging, p.staging_bytes / std::max(1u, threads)) << threads;
  }
}

TEST(IoPlan, BounceBuffersAreWholeBlocks) {
  const TensorInfo t = raw("w", DType::F32, {4});
  Dest out(16);
  for (uint64_t staging : {0ull, 5000ull, 1ull << 20, 32ull << 20}) {
    for (uint64_t chunk : {4096ull + 7, 1ull << 20}) {
      PlanParams p = params(IoMode::Direct, 2, chunk);
      p.staging_bytes = staging;
      const IoPlan plan = plan_reads({{&t, {}, DType::F32, out.get()}}, all_from(1), p);
      EXPECT_GE(plan.bounce_bytes, kBounceBytes);
      EXPECT_EQ(plan.bounce_bytes % ByteSource::direct_alignment(), 0u);
      EXPECT_LE(plan.bounce_bytes, std::max(kBounceBytes, std::min(plan.thread_staging, chunk)));
    }
  }
}

TEST(IoPlan, DecodedPiecesAreAboutAPieceOfOutput) {
  const TensorInfo plain = encoded("q", {2, 8});
  EXPECT_EQ(decoded_piece_blocks(plain), kDecodedPieceBytes / (4 * 4));
  const TensorInfo huge_blocks = encoded("h", {1, 1ull << 20}, 0, std::make_shared<TestDecoder>(1ull << 20, 3));
  EXPECT_EQ(decoded_piece_blocks(huge_blocks), 1u);  // never none
  const TensorInfo split = encoded("s", {2, 8}, 0, std::make_shared<TestDecoder>(4, 6, 2));
  EXPECT_EQ(decoded_piece_blocks(split), UINT64_MAX);  // decoded in one go
}

}  // namespace
}  // namespace wl
