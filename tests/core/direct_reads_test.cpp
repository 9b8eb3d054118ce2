// O_DIRECT reads of any range into memory of any alignment, one at a time (io=direct) and many in
// flight on an io_uring (io=uring): the bytes pread gives, the source's end, a failed queued read.
#include "core/direct_reads.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "core/file.hpp"
#include "core/uring_queue.hpp"
#include "support/refused_io_uring.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

constexpr uint64_t kBlock = ByteSource::direct_alignment();
constexpr uint64_t kFileBytes = 3 * kUringPieceBytes + 12345;  // several pieces, not whole blocks

std::string random_file(const test::TempDir& dir) {
  std::mt19937 rng(7);
  std::string bytes(kFileBytes, '\0');
  for (char& b : bytes) b = static_cast<char>(rng());
  const std::string path = dir.file("random.bin");
  test::write_bytes(path, bytes);
  return path;
}

bool direct_supported(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

// Block-aligned memory that frees itself.
struct Aligned {
  explicit Aligned(uint64_t bytes) : p(static_cast<std::byte*>(std::aligned_alloc(kBlock, (bytes + kBlock - 1) / kBlock * kBlock))) {}
  ~Aligned() { std::free(p); }
  std::byte* p;
};

// The two ways: without a queue (io=direct) and with one (io=uring).
class DirectReads : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !test::io_uring_allowed()) GTEST_SKIP() << "io_uring is refused in this process";
    if (GetParam()) queue_ = std::make_unique<UringQueue>(kUringDepth, "test");
  }
  UringQueue* queue() { return queue_.get(); }

 private:
  std::unique_ptr<UringQueue> queue_;
};

TEST_P(DirectReads, AnyRangeIntoAnyPhaseIsWhatPreadGives) {
  test::TempDir dir;
  const std::string path = random_file(dir);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  const std::string want = test::read_bytes(path);
  File file(path);
  const uint64_t whole = kFileBytes;
  for (const uint64_t offset : {uint64_t{0}, uint64_t{1}, kBlock - 1, kBlock, uint64_t{12345}})
    for (const uint64_t length : {uint64_t{1}, kBlock - 1, kBlock, uint64_t{5000}, kUringPieceBytes + 7, whole - offset})
      for (const uint64_t phase : {offset % kBlock, (offset + 8) % kBlock})
        // The least bounce area (one slot of 2 blocks), a staged read's, and a thread's share of staging.
        for (const uint64_t bounce_bytes : {2 * kBlock, 16 * kBlock, uint64_t{8} << 20}) {
          SCOPED_TRACE(::testing::Message() << "offset " << offset << " length " << length << " phase " << phase
                                            << " bounce " << bounce_bytes);
          Aligned out(length + kBlock), bounce(bounce_bytes);
          std::byte* to = out.p + phase;
          std::memset(out.p, 0, length + kBlock);
          ASSERT_TRUE(read_direct_range(file, offset, length, to, [&] { return bounce.p; }, bounce_bytes, queue()));
          ASSERT_EQ(std::memcmp(to, want.data() + offset, length), 0);
        }
}

TEST_P(DirectReads, TheBounceAreaIsAskedForOnlyWhenAPieceNeedsIt) {
  test::TempDir dir;
  const std::string path = random_file(dir);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  File file(path);
  Aligned out(kFileBytes + kBlock), bounce(16 * kBlock);
  int asked = 0;
  const auto area = [&] {
    ++asked;
    return bounce.p;
  };
  ASSERT_TRUE(read_direct_range(file, kBlock, 3 * kUringPieceBytes, out.p, area, 16 * kBlock, queue()));  // whole blocks
  EXPECT_EQ(asked, 0);
  ASSERT_TRUE(read_direct_range(file, kBlock + 3, 3 * kUringPieceBytes, out.p + 3, area, 16 * kBlock, queue()));  // a tail
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(std::memcmp(out.p + 3, test::read_bytes(path).data() + kBlock + 3, 3 * kUringPieceBytes), 0);
}

TEST_P(DirectReads, ARangePastTheSourcesEndIsFalse) {
  test::TempDir dir;
  const std::string path = random_file(dir);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  File file(path);
  Aligned out(kFileBytes + kBlock), bounce(8 << 20);
  for (const uint64_t phase : {uint64_t{0}, uint64_t{8}})  // in place, then all bounced
    EXPECT_FALSE(read_direct_range(file, 0, kFileBytes + 1, out.p + phase, [&] { return bounce.p; }, 8 << 20, queue()));
  ::truncate(path.c_str(), kUringPieceBytes);  // shrunk under the open source
  EXPECT_FALSE(read_direct_range(file, 0, 2 * kUringPieceBytes, out.p, [&] { return bounce.p; }, 8 << 20, queue()));
  EXPECT_TRUE(read_direct_range(file, 0, kUringPieceBytes, out.p, [&] { return bounce.p; }, 8 << 20, queue()));
}

INSTANTIATE_TEST_SUITE_P(Ways, DirectReads, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "uring" : "direct"); });

// A source whose queued reads go to a descriptor that is not open: each completes with EBADF.
class ClosedDescriptorSource final : public ByteSource {
 public:
  const std::string& name() const noexcept override { return name_; }
  uint64_t size() const noexcept override { return 64 << 20; }
  uint64_t read_some(uint64_t, void*, uint64_t) const override { return 0; }
  bool supports_direct() const override { return true; }
  void queue_direct(UringQueue& queue, uint64_t offset, void* dst, uint64_t length, uint64_t tag) const override {
    queue.queue_read(-1, offset, dst, length, tag);
  }

 private:
  std::string name_ = "closed.bin";
};

TEST(DirectReadsUring, AFailedQueuedReadNamesTheSourceAndItsErrno) {
  if (!test::io_uring_allowed()) GTEST_SKIP() << "io_uring is refused in this process";
  UringQueue queue(kUringDepth, "closed.bin");
  const ClosedDescriptorSource source;
  Aligned out(8 << 20), bounce(8 << 20);
  for (const uint64_t phase : {uint64_t{0}, uint64_t{8}}) {  // many reads in flight when the first fails
    try {
      read_direct_range(source, 0, 6 << 20, out.p + phase, [&] { return bounce.p; }, 8 << 20, &queue);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Io);
      EXPECT_EQ(e.os_errno(), EBADF);
      EXPECT_EQ(e.file(), "closed.bin");
      EXPECT_NE(std::string(e.what()).find("through io_uring failed: Bad file descriptor"), std::string::npos) << e.what();
    }
  }
  // Nothing was left in flight: the ring reads on.
  test::TempDir dir;
  const std::string path = random_file(dir);
  if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  File file(path);
  ASSERT_TRUE(read_direct_range(file, 0, kFileBytes, out.p, [&] { return bounce.p; }, 8 << 20, &queue));
  EXPECT_EQ(std::memcmp(out.p, test::read_bytes(path).data(), kFileBytes), 0);
}

}  // namespace
}  // namespace wl
