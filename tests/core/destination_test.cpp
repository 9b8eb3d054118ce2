// A destination that does not take reads in place (as device memory will not): every chunk is
// staged and handed over through deliver(). The emulated device's addresses are reserved but
// inaccessible, so a reader writing to them directly would crash the test.
#include "core/destination.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "core/io_engine.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {
namespace {

class EmulatedDevice final : public Destination {
 public:
  explicit EmulatedDevice(uint64_t bytes) : memory_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base_ = static_cast<std::byte*>(p);
  }
  ~EmulatedDevice() override { ::munmap(base_, memory_.size()); }
  bool in_place() const override { return false; }
  void prefault(std::byte*, uint64_t) const override {}
  void deliver(std::byte* dst, const std::byte* values, uint64_t n, std::string_view) const override {
    const uint64_t at = static_cast<uint64_t>(dst - base_);
    ASSERT_LE(at + n, memory_.size());
    std::memcpy(const_cast<std::byte*>(memory_.data()) + at, values, n);
    ++deliveries_;
  }
  std::byte* address(uint64_t offset) const { return base_ + offset; }
  const std::byte* contents() const { return memory_.data(); }
  unsigned deliveries() const { return deliveries_.load(); }

 private:
  std::byte* base_;
  std::vector<std::byte> memory_;
  mutable std::atomic<unsigned> deliveries_{0};
};

struct Checkpoint {
  std::vector<float> values = std::vector<float>(5000);
  std::shared_ptr<MemoryOpener> memory = std::make_shared<MemoryOpener>();
  TensorInfo tensor;
  std::vector<std::string> files;  // the catalogue's: w.bin, index 0
  Checkpoint(const test::TempDir& dir) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.25f;
    std::string bytes(7, 'h');  // a header that misaligns the data
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    test::write_bytes(dir.file("w.bin"), bytes);
    files = {dir.file("w.bin")};
    tensor.name = "w";
    tensor.shape = {50, 100};
    tensor.offset = 7;
    tensor.nbytes = values.size() * 4;
  }
};

TEST(Destination, EveryModeDeliversThroughStagingWhenReadsCannotGoInPlace) {
  test::TempDir dir;
  Checkpoint ck(dir);
  for (IoMode mode : {IoMode::Pread, IoMode::Mmap, IoMode::Direct}) {
    for (DType dst_dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(io_mode_name(mode)) + " " + std::string(dtype_name(dst_dtype)));
      CachingOpener cache(local_opener());
      if (mode == IoMode::Direct && !cache.open(ck.files[0])->supports_direct()) continue;
      EmulatedDevice device(ck.values.size() * 4);
      IoOptions io;
      io.mode = mode;
      io.concurrency = 2;
      io.chunk_bytes = 3000;  // many chunks
      io.staging_bytes = 1 << 20;
      // Rows 10..30 only: a slice.
      const ReadStats stats =
          run_reads({ReadRequest{&ck.tensor, Slice{0, 10, 30}, dst_dtype, device.address(0)}}, SourceFiles{ck.files, cache}, io, device);
      EXPECT_EQ(stats.bytes_read, 20u * 100 * 4);
      EXPECT_GT(device.deliveries(), 2u);
      std::vector<float> got(2000);
      convert(dst_dtype, device.contents(), DType::F32, got.data(), got.size());
      // What the slice's values become in dst_dtype, converted on the host.
      std::vector<std::byte> expected_bytes(2000 * dtype_size(dst_dtype));
      std::vector<float> expected(2000);
      convert(DType::F32, ck.values.data() + 1000, dst_dtype, expected_bytes.data(), 2000);
      convert(dst_dtype, expected_bytes.data(), DType::F32, expected.data(), 2000);
      EXPECT_EQ(got, expected);
      EXPECT_EQ(got[0], 250.0f);
      EXPECT_LE(stats.staging_bytes, io.staging_bytes);
    }
  }
}

TEST(Destination, StridedTensorsAreGatheredAndDelivered) {
  test::TempDir dir;
  Checkpoint ck(dir);
  ck.tensor.shape = {100, 50};  // the transpose of the stored 50 x 100
  ck.tensor.strides = {1, 100};
  CachingOpener cache(local_opener());
  EmulatedDevice device(ck.values.size() * 4);
  run_reads({ReadRequest{&ck.tensor, Slice{}, DType::F32, device.address(0)}}, SourceFiles{ck.files, cache}, {}, device);
  const float* got = reinterpret_cast<const float*>(device.contents());
  EXPECT_EQ(got[1], ck.values[100]);  // element (0, 1) is stored at 1 * 100
  EXPECT_EQ(got[50], ck.values[1]);   // element (1, 0)
}

}  // namespace
}  // namespace wl
