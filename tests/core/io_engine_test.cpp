// The I/O engine's modes (pread, direct, uring, mmap, auto), the staging bound, prefaulting, and the
// SIGBUS guard that turns a file shrinking under a mapping into ErrorCode::Truncated.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/io_plan.hpp"
#include "core/sigbus_guard.hpp"
#include "support/refused_io_uring.hpp"
#include "test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

constexpr uint64_t kRows = 300, kCols = 37;  // 44400 bytes of F32: not a multiple of any block size

// A file with `head` junk bytes, then kRows x kCols F32 values i * 0.5, then 5 trailing bytes.
std::string write_raw(const test::TempDir& dir, uint64_t head) {
  std::string bytes(head, '\x7f');
  for (uint64_t i = 0; i < kRows * kCols; ++i) {
    const float v = float(i) * 0.5f;
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  bytes += "tail!";
  const std::string path = dir.file("raw.bin");
  test::write_bytes(path, bytes);
  return path;
}

TensorInfo raw_tensor(uint64_t head) {
  TensorInfo t;
  t.name = "w";
  t.shape = {kRows, kCols};
  t.offset = head;
  t.nbytes = kRows * kCols * 4;
  return t;
}

bool direct_supported(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

IoOptions options(IoMode mode, unsigned threads = 2) {
  IoOptions io;
  io.mode = mode;
  io.concurrency = threads;
  io.chunk_bytes = 5000;  // many chunks, none block-aligned
  return io;
}

// One buffer of `bytes` whose data starts `phase` bytes past a 4096-byte boundary.
struct Buffer {
  // aligned_alloc wants a size that is a multiple of the alignment.
  explicit Buffer(uint64_t bytes, uint64_t phase)
      : mem(static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 8192 + 4095) / 4096 * 4096))) {
    data = mem + phase;
  }
  ~Buffer() { std::free(mem); }
  std::byte* mem;
  std::byte* data;
};

class IoModes : public ::testing::TestWithParam<IoMode> {
 protected:
  void SetUp() override {
    if (GetParam() == IoMode::Uring && !test::io_uring_allowed()) GTEST_SKIP() << "io_uring is refused in this process";
  }
};

TEST_P(IoModes, EveryModeReadsTheSameValuesWhateverTheAlignment) {
  test::TempDir dir;
  for (uint64_t head : {0u, 13u, 4096u, 4099u}) {
    const std::string path = write_raw(dir, head);
    if (reads_direct(GetParam()) && !direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
    WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(head)}, {}});
    const TensorInfo& t = src.tensors()[0];
    // Same dtype, into a buffer at the file offset's phase and at another phase; then to BF16; then a column slice.
    for (uint64_t phase : {head % 4096, (head + 8) % 4096}) {
      Buffer out(t.nbytes, phase);
      const ReadStats s = src.read_all({{&t, Slice{}, DType::F32, out.data}}, options(GetParam()));
      EXPECT_EQ(s.bytes_read, t.nbytes);
      EXPECT_NE(s.mode, IoMode::Auto);
      for (uint64_t i = 0; i < kRows * kCols; ++i) {
        float got;  // the buffer may be misaligned for float on purpose
        std::memcpy(&got, out.data + i * sizeof(float), sizeof got);
        ASSERT_EQ(got, float(i) * 0.5f) << "head " << head << " phase " << phase;
      }
    }
    std::vector<uint16_t> bf16(kRows * kCols);
    src.read_all({{&t, Slice{}, DType::BF16, bf16.data()}}, options(GetParam()));
    for (uint64_t i = 0; i < bf16.size(); ++i) {
      const float v = float(i) * 0.5f;
      uint16_t want;
      convert(DType::F32, &v, DType::BF16, &want, 1);
      ASSERT_EQ(bf16[i], want) << i;
    }
    std::vector<float> cols(kRows * 3);
    src.read_all({{&t, Slice{1, 10, 13}, DType::F32, cols.data()}}, options(GetParam(), 1));
    for (uint64_t r = 0; r < kRows; ++r)
      for (uint64_t c = 0; c < 3; ++c) ASSERT_EQ(cols[r * 3 + c], float(r * kCols + 10 + c) * 0.5f);
  }
}

TEST_P(IoModes, BackToBackTensorsReadTogetherLandInTheirOwnDestinations) {
  test::TempDir dir;
  const std::string path = write_raw(dir, 13);
  if (reads_direct(GetParam()) && !direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  // Many small tensors back to back: rows of the raw file, every third one converted to BF16.
  std::vector<TensorInfo> tensors;
  for (uint64_t r = 0; r < kRows; ++r) {
    TensorInfo t = raw_tensor(13 + r * kCols * 4);
    t.name = "row" + std::to_string(r);
    t.shape = {kCols};
    t.nbytes = kCols * 4;
    tensors.push_back(t);
  }
  WeightSource src("raw", path, Catalogue{{path}, tensors, {}});
  std::vector<float> f32(kRows * kCols);
  std::vector<uint16_t> bf16(kRows * kCols);
  std::vector<ReadRequest> requests;
  for (uint64_t r = 0; r < kRows; ++r)
    requests.push_back(r % 3 ? ReadRequest{&src.tensors()[r], Slice{}, DType::F32, &f32[r * kCols]}
                             : ReadRequest{&src.tensors()[r], Slice{}, DType::BF16, &bf16[r * kCols]});
  IoOptions io = options(GetParam());
  io.chunk_bytes = 1000;  // extents of several tensors, cut inside others
  EXPECT_EQ(src.read_all(requests, io).bytes_read, kRows * kCols * 4);
  for (uint64_t i = 0; i < kRows * kCols; ++i) {
    const float v = float(i) * 0.5f;
    if ((i / kCols) % 3) {
      ASSERT_EQ(f32[i], v) << i;
    } else {
      uint16_t want;
      convert(DType::F32, &v, DType::BF16, &want, 1);
      ASSERT_EQ(bf16[i], want) << i;
    }
  }
}

TEST_P(IoModes, QuantisedGgufDecodesTheSameInEveryMode) {
  test::TempDir dir;
  const std::string path = dir.file("q.gguf");
  TensorView x = TensorView::empty(DType::F32, {64, 96});
  for (uint64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(float(i) * 0.01f) * 3;
  write_gguf(path, {{"q", x, GgmlType::Q8_0}, {"f", x, GgmlType::F16}});
  if (reads_direct(GetParam()) && !direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  auto src = open_files(*find_file_format("gguf"), {path}, path);
  for (const TensorInfo& t : src->tensors()) {
    std::vector<float> want(t.numel()), got(t.numel());
    IoOptions reference;
    reference.mode = IoMode::Pread;
    src->read_all({{&t, Slice{}, DType::F32, want.data()}}, reference);
    src->read_all({{&t, Slice{}, DType::F32, got.data()}}, options(GetParam()));
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << t.name;
  }
}

// A remote object as the engine sees it: no mapping, a cost per request, and each read (scattered
// or not) one request, counted. `own_scatter`: fills its buffers itself, dropping the gaps (as a
// remote source does); else ByteSource's default scattered read.
class PricedSource final : public ByteSource {
 public:
  PricedSource(std::shared_ptr<ByteSource> inner, RequestCost cost, bool own_scatter)
      : inner_(std::move(inner)), cost_(cost), own_scatter_(own_scatter) {}
  const std::string& name() const noexcept override { return inner_->name(); }
  uint64_t size() const noexcept override { return inner_->size(); }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override {
    ++requests;
    return inner_->read_some(offset, dst, length);
  }
  uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const override {
    if (!own_scatter_) return ByteSource::read_some_scattered(offset, buffers, count);
    ++requests;
    uint64_t done = 0;
    for (size_t i = 0; i < count; ++i) {
      std::string bytes = inner_->read_string(offset + done, buffers[i].length);
      if (buffers[i].data) std::memcpy(buffers[i].data, bytes.data(), bytes.size());
      done += buffers[i].length;
    }
    return done;
  }
  RequestCost request_cost() const override { return cost_; }
  mutable std::atomic<uint64_t> requests{0};

 private:
  std::shared_ptr<ByteSource> inner_;
  RequestCost cost_;
  bool own_scatter_;
};

TEST(IoEngine, AStridedSliceOfAPricedSourceComesInOneRequestWithoutItsGaps) {
  test::TempDir dir;
  const std::string path = write_raw(dir, 13);
  for (const bool own_scatter : {true, false}) {
    for (const RequestCost cost : {RequestCost{0.020, 100e6}, RequestCost{}}) {
      SCOPED_TRACE(::testing::Message() << "own scatter " << own_scatter << ", latency " << cost.latency_s);
      auto priced = std::make_shared<PricedSource>(local_opener()->open(path), cost, own_scatter);
      auto files = std::make_shared<MemoryOpener>();
      files->add(priced);
      WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(13)}, {}}, files);
      const TensorInfo& t = src.tensors()[0];
      IoOptions io;
      io.concurrency = 1;
      std::vector<float> cols(kRows * 3);  // columns 10..12 of every row: runs of 12 bytes, 136 apart
      const ReadStats stats = src.read_all({{&t, Slice{1, 10, 13}, DType::F32, cols.data()}}, io);
      EXPECT_EQ(stats.bytes_read, kRows * 3 * 4);  // what was kept
      for (uint64_t r = 0; r < kRows; ++r)
        for (uint64_t c = 0; c < 3; ++c) ASSERT_EQ(cols[r * 3 + c], float(r * kCols + 10 + c) * 0.5f) << r;
      const bool one_request = cost.latency_s > 0 && own_scatter;  // the default reads a buffer at a time
      if (one_request) {
        EXPECT_EQ(priced->requests, 1u);
      }
      if (cost.latency_s == 0) {
        EXPECT_EQ(priced->requests, kRows);
      }
      // Converted on the way (staged): the same values, in pieces of the staging share.
      std::vector<uint16_t> bf16(kRows * 3);
      src.read_all({{&t, Slice{1, 10, 13}, DType::BF16, bf16.data()}}, io);
      for (uint64_t r = 0; r < kRows; ++r)
        for (uint64_t c = 0; c < 3; ++c) {
          const float v = float(r * kCols + 10 + c) * 0.5f;
          uint16_t want;
          convert(DType::F32, &v, DType::BF16, &want, 1);
          ASSERT_EQ(bf16[r * 3 + c], want) << r;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, IoModes,
                         ::testing::Values(IoMode::Pread, IoMode::Direct, IoMode::Uring, IoMode::Mmap, IoMode::Auto),
                         [](const auto& info) { return std::string(io_mode_name(info.param)); });

TEST(IoEngine, StagingStaysWithinTheBound) {
  test::TempDir dir;
  const std::string path = dir.file("big.bin");
  std::string bytes(3 << 20, '\0');
  test::write_bytes(path, bytes);
  TensorInfo t;
  t.name = "big";
  t.shape = {3 << 18};
  t.nbytes = 3 << 20;
  WeightSource src("raw", path, Catalogue{{path}, {t}, {}});
  std::vector<uint16_t> out(3 << 18);
  for (IoMode mode : {IoMode::Pread, IoMode::Direct, IoMode::Uring, IoMode::Mmap}) {
    if (reads_direct(mode) && !direct_supported(path)) continue;
    if (mode == IoMode::Uring && !test::io_uring_allowed()) continue;
    // 6 MiB: O_DIRECT staging of 2 MiB and more per thread, on huge pages, is still counted and bounded.
    for (const uint64_t staging : {uint64_t{512} << 10, uint64_t{6} << 20}) {
      IoOptions io;
      io.mode = mode;
      io.concurrency = 2;
      io.staging_bytes = staging;
      const ReadStats s = src.read_all({{&src.tensors()[0], Slice{}, DType::BF16, out.data()}}, io);
      EXPECT_LE(s.staging_bytes, io.staging_bytes) << io_mode_name(mode);
      if (mode != IoMode::Mmap) {  // mmap converts straight out of the mapping
        EXPECT_GT(s.staging_bytes, 0u) << io_mode_name(mode);
      }
    }
  }
}

TEST(IoEngine, AutoPicksPreadForCachedFilesAndDirectForEvictedOnes) {
  test::TempDir dir;
  const std::string path = write_raw(dir, 0);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(0)}, {}});
  std::vector<float> out(kRows * kCols);
  IoOptions io;  // mode Auto
  const ReadStats warm = src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, io);
  EXPECT_EQ(warm.mode, IoMode::Pread) << warm.mode_reason;
  EXPECT_NE(warm.mode_reason.find("auto:"), std::string::npos);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  const ReadStats cold = src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, io);
  EXPECT_EQ(cold.mode, IoMode::Direct) << cold.mode_reason;
  EXPECT_EQ(out[kRows * kCols - 1], float(kRows * kCols - 1) * 0.5f);
}

TEST(IoEngine, MmapOfAFileTruncatedWhileLoadingIsTruncatedNamingFileAndTensor) {
  test::TempDir dir;
  const std::string path = write_raw(dir, 0);
  WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(0)}, {}});
  std::vector<float> out(kRows * kCols);
  IoOptions io = options(IoMode::Mmap, 1);
  bool truncated = false;
  io.progress = [&](uint64_t, uint64_t) {
    if (!truncated) std::filesystem::resize_file(path, 100);  // after the first chunk, under the mapping
    truncated = true;
    return true;
  };
  const std::string msg = test::expect_error(ErrorCode::Truncated, [&] {
    src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, io);
  });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  // The thread survives and can fault again: the same with conversion.
  std::vector<uint16_t> bf16(kRows * kCols);
  test::expect_error(ErrorCode::Truncated, [&] {
    src.read_all({{&src.tensors()[0], Slice{}, DType::BF16, bf16.data()}}, options(IoMode::Mmap, 2));
  });
}

TEST(IoEngine, DirectAndUringReadsOfAFileTruncatedWhileLoadingAreTruncatedNamingFileAndTensor) {
  for (const IoMode mode : {IoMode::Direct, IoMode::Uring}) {
    SCOPED_TRACE(io_mode_name(mode));
    if (mode == IoMode::Uring && !test::io_uring_allowed()) continue;
    test::TempDir dir;
    const std::string path = write_raw(dir, 13);
    if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
    WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(13)}, {}});
    for (const DType to : {DType::F32, DType::BF16}) {  // in place, then staged
      test::write_bytes(path, test::read_bytes(path).substr(0, 13) + std::string(kRows * kCols * 4 + 5, 'x'));
      std::vector<float> out(kRows * kCols);
      IoOptions io = options(mode, 1);
      bool truncated = false;
      io.progress = [&](uint64_t, uint64_t) {
        if (!truncated) std::filesystem::resize_file(path, 100);  // after the first chunk
        truncated = true;
        return true;
      };
      const std::string msg = test::expect_error(ErrorCode::Truncated, [&] {
        src.read_all({{&src.tensors()[0], Slice{}, to, out.data()}}, io);
      });
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
    }
  }
}

TEST(IoEngine, UringReadsManyFilesWithLittleStagingAsPreadDoes) {
  if (!test::io_uring_allowed()) GTEST_SKIP() << "io_uring is refused in this process";
  test::TempDir dir;
  // Twelve files, each one tensor at an odd offset, of a size that is no multiple of a block: F32
  // in the even ones, BF16 in the odd ones (read as F32 and BF16 each: converted both ways).
  constexpr uint64_t kFiles = 12, kElems = 600001;
  std::vector<std::string> paths;
  std::vector<TensorInfo> tensors;
  for (uint64_t f = 0; f < kFiles; ++f) {
    const uint64_t head = 8 + 997 * f;
    const DType stored = f % 2 ? DType::BF16 : DType::F32;
    std::string bytes(head, '\x11');
    for (uint64_t i = 0; i < kElems; ++i) {
      const float v = float(i % 4099) * 0.25f + float(f);
      char value[4];
      convert(DType::F32, &v, stored, value, 1);
      bytes.append(value, dtype_size(stored));
    }
    paths.push_back(dir.file("shard" + std::to_string(f) + ".bin"));
    test::write_bytes(paths.back(), bytes);
    TensorInfo t;
    t.name = "t" + std::to_string(f);
    t.shape = {kElems};
    t.dtype = stored;
    t.offset = head;
    t.nbytes = kElems * dtype_size(stored);
    t.source = f;
    tensors.push_back(t);
  }
  if (!direct_supported(paths[0])) GTEST_SKIP() << "no O_DIRECT on " << paths[0];
  WeightSource src("raw", paths[0], Catalogue{paths, tensors, {}});
  for (const DType to : {DType::F32, DType::BF16}) {
    const size_t size = dtype_size(to);
    std::vector<std::byte> want(kFiles * kElems * size), got(kFiles * kElems * size + 8);
    auto requests = [&](std::byte* base) {
      std::vector<ReadRequest> r;
      for (uint64_t f = 0; f < kFiles; ++f) r.push_back({&src.tensors()[f], Slice{}, to, base + f * kElems * size});
      return r;
    };
    IoOptions pread;
    pread.mode = IoMode::Pread;
    src.read_all(requests(want.data()), pread);
    for (uint64_t f = 0; f < kFiles && to == DType::F32; ++f)  // the reference itself, at a few places
      for (const uint64_t i : {uint64_t{0}, uint64_t{4100}, kElems - 1}) {
        const float v = float(i % 4099) * 0.25f + float(f);
        char stored[4];
        float expected, got_value;
        convert(DType::F32, &v, tensors[f].dtype, stored, 1);
        convert(tensors[f].dtype, stored, DType::F32, &expected, 1);
        std::memcpy(&got_value, want.data() + (f * kElems + i) * 4, 4);
        ASSERT_EQ(got_value, expected) << "file " << f << " element " << i;
      }
    IoOptions io;
    io.mode = IoMode::Uring;
    io.concurrency = 3;
    io.staging_bytes = 1 << 20;
    for (const uint64_t phase : {uint64_t{0}, uint64_t{2}}) {  // destinations at other phases than the files'
      const ReadStats s = src.read_all(requests(got.data() + phase), io);
      EXPECT_EQ(s.mode, IoMode::Uring);
      EXPECT_LE(s.staging_bytes, io.staging_bytes);
      ASSERT_EQ(std::memcmp(got.data() + phase, want.data(), want.size()), 0) << "to " << dtype_name(to) << " phase " << phase;
    }
  }
}

// Death tests in their own process: a seccomp filter refusing io_uring cannot be undone.
TEST(IoEngineDeathTest, ExplicitUringWhereTheKernelRefusesItIsAnIoErrorNamingTheFileAndErrno) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  test::TempDir dir;
  const std::string path = write_raw(dir, 13);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  for (const int err : {EPERM, ENOSYS}) {
    EXPECT_EXIT(
        {
          if (!test::refuse_io_uring(err)) std::_Exit(2);
          WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(13)}, {}});
          std::vector<float> out(kRows * kCols);
          try {
            src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, options(IoMode::Uring));
            std::_Exit(3);
          } catch (const Error& e) {
            const std::string what = e.what();
            if (e.code() != ErrorCode::Io || e.os_errno() != err || e.file() != path ||
                what.find(std::strerror(err)) == std::string::npos || what.find("io=uring") == std::string::npos)
              std::_Exit(4);
          }
          // io=auto reads on, by the rule (no probe for so small a file): O_DIRECT one read at a time.
          const ReadStats s = src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, IoOptions{});
          std::_Exit(s.mode != IoMode::Uring && out.back() == float(kRows * kCols - 1) * 0.5f ? 0 : 5);
        },
        ::testing::ExitedWithCode(0), "")
        << std::strerror(err);
  }
}

TEST(IoEngine, ViewChecksTheFileSizeBeforeMapping) {
  test::TempDir dir;
  const std::string path = write_raw(dir, 0);
  WeightSource src("raw", path, Catalogue{{path}, {raw_tensor(0)}, {}});
  ASSERT_TRUE(src.view(src.tensors()[0]).has_value());
  std::filesystem::resize_file(path, 100);
  const std::string msg = test::expect_error(ErrorCode::Truncated, [&] { src.view(src.tensors()[0]); });
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
}

// Death tests in their own process ("threadsafe" re-runs the binary), so that the guard installs
// its handler over the one the test put there first.
void exit_42(int) { std::_Exit(42); }

// One block, the whole [4, 6, 5] tensor, decoding its rows (the last dimension) alone: out = byte / 2.
// It counts the rows each call decodes; decoding the block whole fails the test.
class RowDecoder final : public Decoder {
 public:
  std::string name() const override { return "rows"; }
  uint64_t block_elems() const override { return 120; }
  uint64_t block_bytes() const override { return 120; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte*, uint64_t, void*) const override { ADD_FAILURE() << "a slice decoded the whole block"; }
  uint64_t row_elems() const override { return 5; }
  void decode_block_rows(const std::byte* block, uint64_t row0, uint64_t row1, void* dst) const override {
    auto* out = static_cast<float*>(dst);
    for (uint64_t i = row0 * 5; i < row1 * 5; ++i) *out++ = float(uint8_t(block[i])) / 2;
    rows += row1 - row0;
  }
  mutable std::atomic<uint64_t> rows{0};
};

// A slice of a one-block tensor whose decoder decodes row ranges decodes only the rows it covers,
// along every dimension (a tensor-parallel rank's share of a quantized layer), with the values of
// the whole tensor decoded and sliced.
TEST(IoEngine, ASliceOfARowDecodedBlockDecodesOnlyItsRows) {
  test::TempDir dir;
  std::string bytes;
  for (int i = 0; i < 120; ++i) bytes += char(i * 7 % 251);
  const std::string path = dir.file("rows.bin");
  test::write_bytes(path, bytes);
  TensorInfo info;
  info.name = "w";
  info.shape = {4, 6, 5};
  info.nbytes = 120;
  auto decoder = std::make_shared<RowDecoder>();
  info.decoder = decoder;
  WeightSource src("rows", path, Catalogue{{path}, {info}, {}});
  const TensorInfo& t = src.tensors()[0];
  struct Case {
    Slice slice;
    uint64_t rows;  // the rows it covers
  };
  for (const Case& c : {Case{{0, 1, 3}, 12}, Case{{1, 2, 5}, 12}, Case{{2, 1, 3}, 24}}) {
    decoder->rows = 0;
    const Shape shape = src.slice_shape(t, c.slice);
    std::vector<float> got(shape_numel(shape));
    src.read_all({{&t, c.slice, DType::F32, got.data()}}, options(IoMode::Pread, 1));
    EXPECT_EQ(decoder->rows, c.rows) << "dim " << c.slice.dim;
    uint64_t k = 0;
    for (uint64_t a = 0; a < shape[0]; ++a)
      for (uint64_t b = 0; b < shape[1]; ++b)
        for (uint64_t e = 0; e < shape[2]; ++e) {
          uint64_t at[3] = {a, b, e};
          at[c.slice.dim] += c.slice.begin;
          EXPECT_EQ(got[k++], float(uint8_t(bytes[(at[0] * 6 + at[1]) * 5 + at[2]])) / 2) << "dim " << c.slice.dim;
        }
  }
}

TEST(SigbusGuardDeathTest, FaultsOutsideAGuardGoToThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::signal(SIGBUS, exit_42);
        install_sigbus_handler();
        install_sigbus_handler();
        EXPECT_TRUE(guarded([] {}));
        std::raise(SIGBUS);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST(SigbusGuardDeathTest, FaultsOutsideAGuardStillKillWithSigbusByDefault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::signal(SIGBUS, SIG_DFL);  // a sanitizer may have installed its own handler
        install_sigbus_handler();
        EXPECT_TRUE(guarded([] {}));
        std::raise(SIGBUS);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST(SigbusGuard, AFaultInsideAGuardReturnsFalse) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  test::write_bytes(path, std::string(3 * 4096, 'x'));
  const int fd = ::open(path.c_str(), O_RDONLY);
  void* map = ::mmap(nullptr, 3 * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(::ftruncate(::open(path.c_str(), O_WRONLY), 10), 0);
  volatile char sink = 0;
  install_sigbus_handler();
  EXPECT_FALSE(guarded([&] { sink = static_cast<const char*>(map)[2 * 4096]; }));
  EXPECT_TRUE(guarded([&] { sink = static_cast<const char*>(map)[5]; }));
  ::munmap(map, 3 * 4096);
  ::close(fd);
}

}  // namespace
}  // namespace wl
