// The device pipeline on the emulated device: reads staged on the host, converted there, copied
// through a bounded ring of pinned buffers by asynchronous copies. The emulated device reports
// copies from unpinned memory and buffers refilled before their copy completed.
#include "core/device_destination.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "support/emulated_device.hpp"
#include "core/io_engine.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

constexpr uint64_t kRows = 50, kCols = 100;

// Two F32 tensors "a" and "b" of kRows x kCols, after a header that misaligns them.
struct Checkpoint {
  std::vector<float> values = std::vector<float>(2 * kRows * kCols);
  TensorInfo a, b;
  std::vector<std::string> files;  // the catalogue's: w.bin, index 0
  explicit Checkpoint(const test::TempDir& dir) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.25f;
    std::string bytes(7, 'h');
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    test::write_bytes(dir.file("w.bin"), bytes);
    files = {dir.file("w.bin")};
    for (TensorInfo* t : {&a, &b}) {
      t->name = t == &a ? "a" : "b";
      t->shape = {kRows, kCols};
      t->offset = 7 + (t == &a ? 0 : kRows * kCols * 4);
      t->nbytes = kRows * kCols * 4;
    }
  }
  // Elements [first, first + n) in `dtype`, read back as F32.
  std::vector<float> expected(size_t first, size_t n, DType dtype) const {
    std::vector<std::byte> bytes(n * dtype_size(dtype));
    std::vector<float> out(n);
    convert(DType::F32, values.data() + first, dtype, bytes.data(), n);
    convert(dtype, bytes.data(), DType::F32, out.data(), n);
    return out;
  }
};

std::vector<float> device_floats(const EmulatedDevice& device, uint64_t offset, size_t n, DType dtype) {
  std::vector<float> out(n);
  convert(dtype, device.contents() + offset, DType::F32, out.data(), n);
  return out;
}

IoOptions small_chunks(IoMode mode) {
  IoOptions io;
  io.mode = mode;
  io.concurrency = 3;
  io.chunk_bytes = 3000;  // many chunks, each several copies through 1 KiB buffers
  return io;
}

TEST(DeviceDestination, EveryModeConvertsOnTheHostAndCopiesThroughTheRing) {
  test::TempDir dir;
  Checkpoint ck(dir);
  for (IoMode mode : {IoMode::Pread, IoMode::Mmap, IoMode::Direct}) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(io_mode_name(mode)) + " " + std::string(dtype_name(dtype)));
      CachingOpener cache(local_opener());
      if (mode == IoMode::Direct && !cache.open(ck.files[0])->supports_direct()) continue;
      EmulatedDevice device(1 << 20, 2);
      device.set_delay_us(20);  // copies complete well after they started
      const DeviceDestination ring(device, 4096, 1024);
      const uint64_t bytes = kRows * kCols * dtype_size(dtype);
      std::byte* a = device.alloc_device(bytes);
      std::byte* b = device.alloc_device(bytes);
      const ReadStats stats = run_reads({ReadRequest{&ck.a, Slice{}, dtype, a}, ReadRequest{&ck.b, Slice{}, dtype, b}},
                                        SourceFiles{ck.files, cache}, small_chunks(mode), ring);
      EXPECT_EQ(stats.bytes_read, 2 * kRows * kCols * 4);
      EXPECT_EQ(device.bytes_copied(), 2 * bytes);  // BF16: half of what was read crosses the bus
      EXPECT_EQ(device.copies_done(), ring.copies());
      EXPECT_EQ(device.violations(), std::vector<std::string>{});
      EXPECT_EQ(device.pinned_peak(), 4096u);  // the ring, never more
      EXPECT_EQ(device_floats(device, a - device.address(0), kRows * kCols, dtype), ck.expected(0, kRows * kCols, dtype));
      EXPECT_EQ(device_floats(device, b - device.address(0), kRows * kCols, dtype),
                ck.expected(kRows * kCols, kRows * kCols, dtype));
    }
  }
}

TEST(DeviceDestination, CopiesAreAsynchronousAndDrainWaitsForThem) {
  EmulatedDevice device(1 << 16, 2);
  const DeviceDestination ring(device, 4 * 1024, 1024);
  std::vector<std::byte> values(3 * 1024);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::byte(i * 7);
  device.hold(true);
  ring.deliver(device.address(0), values.data(), values.size(), "w");  // 3 copies, none completed
  EXPECT_EQ(ring.copies(), 3u);
  EXPECT_EQ(device.copies_done(), 0u);
  device.hold(false);
  ring.drain();
  EXPECT_EQ(device.copies_done(), 3u);
  EXPECT_EQ(std::memcmp(device.contents(), values.data(), values.size()), 0);
  EXPECT_EQ(device.violations(), std::vector<std::string>{});
}

TEST(DeviceDestination, ABufferIsRefilledOnlyAfterItsCopyCompleted) {
  EmulatedDevice device(1 << 16, 1);
  const DeviceDestination ring(device, 2 * 1024, 1024);  // two buffers for eight copies
  std::vector<std::byte> values(8 * 1024);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::byte(i * 13 + i / 1024);
  device.hold(true);
  std::thread reader([&] { ring.deliver(device.address(0), values.data(), values.size(), "w"); });
  device.hold(false);  // the reader waits for copies to complete before reusing their buffers
  reader.join();
  ring.drain();
  EXPECT_EQ(device.copies_done(), 8u);
  EXPECT_LE(device.in_flight_peak(), 2u);
  EXPECT_EQ(std::memcmp(device.contents(), values.data(), values.size()), 0);
  EXPECT_EQ(device.violations(), std::vector<std::string>{});
}

TEST(DeviceDestination, AFailedCopyNamesItsParameterAndFailsTheLoad) {
  test::TempDir dir;
  Checkpoint ck(dir);
  CachingOpener cache(local_opener());
  EmulatedDevice device(1 << 20, 2);
  const DeviceDestination ring(device, 4096, 1024);
  std::byte* a = device.alloc_device(kRows * kCols * 4);
  std::byte* b = device.alloc_device(kRows * kCols * 4);
  device.fail_copies_at(static_cast<uint64_t>(b - device.address(0)) + 5000);
  try {
    run_reads({ReadRequest{&ck.a, Slice{}, DType::F32, a}, ReadRequest{&ck.b, Slice{}, DType::F32, b}}, SourceFiles{ck.files, cache},
              small_chunks(IoMode::Pread), ring);
    FAIL() << "a failed copy must fail the load";
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "b");
    EXPECT_NE(std::string(e.what()).find("copy to emulated device failed: injected copy failure"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(device.copies_done(), ring.copies());  // nothing left in flight once the load returned
}

TEST(DeviceDestination, CancellingStopsTheReadsAndWaitsForCopiesInFlight) {
  test::TempDir dir;
  Checkpoint ck(dir);
  CachingOpener cache(local_opener());
  EmulatedDevice device(1 << 20, 2);
  device.set_delay_us(50);
  const DeviceDestination ring(device, 4096, 1024);
  IoOptions io = small_chunks(IoMode::Pread);
  io.progress = [](uint64_t, uint64_t) { return false; };
  std::byte* a = device.alloc_device(kRows * kCols * 4);
  try {
    run_reads({ReadRequest{&ck.a, Slice{}, DType::F32, a}}, SourceFiles{ck.files, cache}, io, ring);
    FAIL() << "the load must be cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Cancelled);
  }
  EXPECT_GT(ring.copies(), 0u);
  EXPECT_LT(device.bytes_copied(), kRows * kCols * 4);
  EXPECT_EQ(device.copies_done(), ring.copies());
  EXPECT_EQ(device.violations(), std::vector<std::string>{});
}

// Tensor-parallel ranks read slices along either dimension; an empty tensor copies nothing.
TEST(DeviceDestination, SlicesAndEmptyTensorsBehaveAsOnTheHost) {
  test::TempDir dir;
  Checkpoint ck(dir);
  TensorInfo empty = ck.a;
  empty.name = "empty";
  empty.shape = {0, kCols};
  empty.nbytes = 0;
  CachingOpener cache(local_opener());
  EmulatedDevice device(1 << 20, 2);
  const DeviceDestination ring(device, 4096, 1024);
  const uint64_t half = kRows * kCols / 2;
  std::byte* rows = device.alloc_device(half * 2);
  std::byte* cols = device.alloc_device(half * 2);
  std::byte* nothing = device.alloc_device(0);
  run_reads({ReadRequest{&ck.a, Slice{0, kRows / 2, kRows}, DType::BF16, rows},
             ReadRequest{&ck.b, Slice{1, 0, kCols / 2}, DType::BF16, cols}, ReadRequest{&empty, Slice{}, DType::BF16, nothing}},
            SourceFiles{ck.files, cache}, small_chunks(IoMode::Pread), ring);
  EXPECT_EQ(device_floats(device, rows - device.address(0), half, DType::BF16), ck.expected(half, half, DType::BF16));
  const std::vector<float> got = device_floats(device, cols - device.address(0), half, DType::BF16);
  for (uint64_t r = 0; r < kRows; ++r)
    for (uint64_t c = 0; c < kCols / 2; ++c)
      ASSERT_EQ(got[r * kCols / 2 + c], ck.expected(kRows * kCols + r * kCols + c, 1, DType::BF16)[0]) << r << "," << c;
  EXPECT_EQ(device.bytes_copied(), 2 * half * 2);
  EXPECT_EQ(device.violations(), std::vector<std::string>{});
}

}  // namespace
}  // namespace wl
