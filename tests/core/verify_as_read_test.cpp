// verify=sha256: the digest of each file from the bytes the I/O engine reads (every mode, many
// threads, chunks cut anywhere, slices that skip bytes, conversions), checked against a cache
// blob's name, a sidecar or SHA256SUMS. Reference digests come from sha256sum, not from our code.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "core/io_plan.hpp"
#include "core/ordered_digest.hpp"
#include "test_util.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHead = 13, kRows = 300, kCols = 37;

std::string sha256sum(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  char hex[65] = {};
  EXPECT_EQ(std::fread(hex, 1, 64, p), 64u);
  ::pclose(p);
  return hex;
}

// kHead junk bytes, kRows x kCols F32 values i * 0.5, 5 trailing bytes.
std::string raw_bytes() {
  std::string bytes(kHead, '\x7f');
  for (uint64_t i = 0; i < kRows * kCols; ++i) {
    const float v = float(i) * 0.5f;
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return bytes + "tail!";
}

// A Hugging Face cache layout: blobs/<sha256> and snapshots/main/raw.bin linking to it. Returns
// the snapshot path.
std::string cached_file(const test::TempDir& dir, const std::string& bytes) {
  const std::string staged = dir.file("staged.bin");
  test::write_bytes(staged, bytes);
  fs::create_directories(dir.path() / "blobs");
  fs::create_directories(dir.path() / "snapshots" / "main");
  const fs::path blob = dir.path() / "blobs" / sha256sum(staged);
  fs::rename(staged, blob);
  const fs::path link = dir.path() / "snapshots" / "main" / "raw.bin";
  fs::create_symlink(fs::path("../../blobs") / blob.filename(), link);
  return link.string();
}

// The rows as tensors, every third one converted to BF16, read with small chunks on 4 threads.
struct Rows {
  explicit Rows(const std::string& path) {
    for (uint64_t r = 0; r < kRows; ++r) {
      TensorInfo t;
      t.name = "row" + std::to_string(r);
      t.shape = {kCols};
      t.offset = kHead + r * kCols * 4;
      t.nbytes = kCols * 4;
      tensors.push_back(t);
    }
    src = std::make_unique<WeightSource>("raw", path, Catalogue{{path}, tensors, {}});
    for (uint64_t r = 0; r < kRows; ++r)
      requests.push_back({&src->tensors()[r], Slice{}, r % 3 ? DType::F32 : DType::BF16, &out[r * kCols]});
  }
  ReadStats read(IoMode mode) const {
    IoOptions io;
    io.mode = mode;
    io.concurrency = 4;
    io.chunk_bytes = 1000;
    io.verify_sha256 = true;
    return src->read_all(requests, io);
  }
  std::vector<TensorInfo> tensors;
  std::unique_ptr<WeightSource> src;
  std::vector<ReadRequest> requests;
  std::vector<float> out = std::vector<float>(kRows * kCols);  // BF16 rows use half of theirs
};

bool direct_supported(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

class VerifyModes : public ::testing::TestWithParam<IoMode> {};

TEST_P(VerifyModes, ACachedBlobReadWholeIsVerifiedAndItsValuesLand) {
  test::TempDir dir;
  const std::string path = cached_file(dir, raw_bytes());
  if (GetParam() == IoMode::Direct && !direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  Rows rows(path);
  const ReadStats s = rows.read(GetParam());
  EXPECT_EQ(s.bytes_read, raw_bytes().size());  // the header and the tail too
  EXPECT_EQ(rows.out[kCols + 5], float(kCols + 5) * 0.5f);
  EXPECT_EQ(rows.out[kRows * kCols - 1], float(kRows * kCols - 1) * 0.5f);
}

TEST_P(VerifyModes, OneCorruptedByteFailsNamingTheFileAndBothDigests) {
  test::TempDir dir;
  const std::string path = cached_file(dir, raw_bytes());
  if (GetParam() == IoMode::Direct && !direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  const std::string blob = fs::canonical(path).string();
  const std::string expected = fs::path(blob).filename().string();
  for (uint64_t at : {uint64_t{2}, kHead + 4000, kHead + kRows * kCols * 4 + 1}) {  // header, data, tail
    std::string bytes = raw_bytes();
    bytes[at] ^= 1;
    test::write_bytes(blob, bytes);
    const std::string got = sha256sum(blob);
    Rows rows(path);
    const std::string msg = test::expect_error(ErrorCode::ChecksumMismatch, [&] { rows.read(GetParam()); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(got), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    EXPECT_NE(msg.find("blob's name"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Io, VerifyModes, ::testing::Values(IoMode::Pread, IoMode::Mmap, IoMode::Direct),
                         [](const auto& info) { return std::string(io_mode_name(info.param)); });

TEST(VerifyAsRead, ASliceStillHashesTheWholeFile) {
  test::TempDir dir;
  const std::string path = cached_file(dir, raw_bytes());
  std::vector<float> cols(kRows * 3);
  IoOptions io;
  io.concurrency = 3;
  io.chunk_bytes = 700;
  io.verify_sha256 = true;
  TensorInfo big;
  big.name = "w";
  big.shape = {kRows, kCols};
  big.offset = kHead;
  big.nbytes = kRows * kCols * 4;
  WeightSource src("raw", path, Catalogue{{path}, {big}, {}});
  src.read_all({{&src.tensors()[0], Slice{1, 10, 13}, DType::F32, cols.data()}}, io);
  EXPECT_EQ(cols[3 * 7 + 1], float(7 * kCols + 11) * 0.5f);
}

TEST(VerifyAsRead, ASidecarOrSha256SumsNamesTheDigest) {
  test::TempDir dir;
  const std::string path = dir.file("raw.bin");
  test::write_bytes(path, raw_bytes());
  const std::string hex = sha256sum(path);
  test::write_bytes(path + ".sha256", hex + "  raw.bin\n");
  Rows(path).read(IoMode::Pread);
  fs::remove(path + ".sha256");
  test::write_bytes(dir.file("SHA256SUMS"), std::string(64, '0') + "  other.bin\n" + hex + " *raw.bin\n");
  Rows(path).read(IoMode::Pread);
  test::write_bytes(dir.file("SHA256SUMS"), std::string(64, 'a') + "  ./raw.bin\n");
  const std::string msg = test::expect_error(ErrorCode::ChecksumMismatch, [&] { Rows(path).read(IoMode::Pread); });
  EXPECT_NE(msg.find("SHA256SUMS"), std::string::npos) << msg;
}

TEST(VerifyAsRead, NothingNamingTheDigestIsAnErrorNotASkip) {
  test::TempDir dir;
  const std::string path = dir.file("raw.bin");
  test::write_bytes(path, raw_bytes());
  Rows rows(path);
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { rows.read(IoMode::Pread); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("nothing names"), std::string::npos) << msg;
  EXPECT_EQ(rows.out[kCols], 0.0f);  // refused before reading
}

// The planner: a file read whole, its extents back to back in file order whatever the catalogue's
// order, the bytes no tensor holds (header, gap, tail) read by fillers without a destination.
TEST(VerifyAsRead, ThePlanCoversTheWholeFileInFileOrder) {
  TensorInfo a, b;
  a.name = "a", a.shape = {50}, a.offset = 600, a.nbytes = 200;
  b.name = "b", b.shape = {100}, b.offset = 100, b.nbytes = 400;
  std::vector<float> out(150);
  const std::vector<ReadRequest> requests = {{&a, {}, DType::F32, out.data()}, {&b, {}, DType::F32, out.data() + 50}};
  PlanParams p;
  p.threads = 3;
  p.chunk_bytes = 64;
  p.whole = {uint64_t{1000}};
  const IoPlan plan = plan_reads(requests, {0, 0}, p);
  uint64_t at = 0, fillers = 0;
  for (const Extent& e : plan.extents) {
    EXPECT_EQ(plan.chunks[e.first].src_offset, at);
    at += e.span;
  }
  for (const Chunk& c : plan.chunks) fillers += c.filler() ? c.src_bytes : 0;
  EXPECT_EQ(at, 1000u);
  EXPECT_EQ(fillers, 1000u - 600u);
  EXPECT_EQ(plan.total_bytes, 1000u);
}

// Pieces handed in out of order from several threads, some kept as pointers, some as copies
// under a bound smaller than the file, overlapping: the digest sha256sum computes.
TEST(OrderedDigest, PiecesInAnyOrderFromManyThreadsGiveTheFileDigest) {
  test::TempDir dir;
  std::string bytes(3u << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  const std::string path = dir.file("random.bin");
  test::write_bytes(path, bytes);
  struct Piece {
    uint64_t offset, n;
  };
  std::vector<Piece> pieces;
  for (uint64_t at = 0; at < bytes.size();) {
    const uint64_t n = std::min<uint64_t>(1 + rng() % 70000, bytes.size() - at);
    pieces.push_back({at, n});
    if (at > 100 && rng() % 5 == 0) pieces.push_back({at - 100, n + 100});  // an overlap
    at += n;
  }
  // Nearly in order, as the engine's threads take them.
  for (size_t i = 0; i + 1 < pieces.size(); i += 2)
    if (rng() % 2) std::swap(pieces[i], pieces[i + 1]);
  OrderedDigest digest(bytes.size(), path, 200000);
  std::atomic<size_t> next{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      std::vector<std::byte> staging;
      for (size_t i = next++; i < pieces.size(); i = next++) {
        const auto* at = reinterpret_cast<const std::byte*>(bytes.data()) + pieces[i].offset;
        if (i % 3) {
          digest.add(pieces[i].offset, at, pieces[i].n, true);
        } else {  // staged: overwritten as soon as add returns
          staging.assign(at, at + pieces[i].n);
          digest.add(pieces[i].offset, staging.data(), pieces[i].n, false);
          std::fill(staging.begin(), staging.end(), std::byte{0});
        }
      }
    });
  threads.clear();
  EXPECT_EQ(digest.hashed(), bytes.size());
  EXPECT_EQ(digest.hex(), sha256sum(path));
}

}  // namespace
}  // namespace wl
