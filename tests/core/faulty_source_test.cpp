// The I/O engine's error paths, reproduced through a faulty byte source: short reads, a failing
// read, corrupted bytes, and a cancelled load that must stop every reader.
#include "support/faulty_source.hpp"

#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <cstring>
#include <filesystem>

#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// Threads of this process now (every reader the engine started must be gone after a load).
size_t thread_count() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

TensorView iota(Shape shape, float start) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + float(i);
  return t;
}

// A safetensors checkpoint of 8 tensors of 64 x 100 F32 values, held in memory.
std::string checkpoint_bytes() {
  test::TempDir dir;
  std::vector<std::pair<std::string, TensorView>> tensors;
  for (int i = 0; i < 8; ++i) tensors.emplace_back("w" + std::to_string(i), iota({64, 100}, float(i * 10000)));
  write_safetensors(dir.file("m.safetensors"), tensors);
  return test::read_bytes(dir.file("m.safetensors"));
}

class FaultySourceLoad : public ::testing::Test {
 protected:
  // The checkpoint opened through a faulty source: the catalogue is read with `catalogue_faults`
  // (none by default), then every data read goes through `faults`.
  std::unique_ptr<WeightSource> open(Faults faults) {
    auto clean = memory_source("faulty.safetensors", MemoryRegion::of_string(bytes_));
    auto catalogue_opener = std::make_shared<MemoryOpener>();
    catalogue_opener->add(clean);
    Catalogue c = safetensors_format().read_catalogue(*clean, *catalogue_opener);
    faulty_ = std::make_shared<FaultySource>(clean, faults);
    auto opener = std::make_shared<MemoryOpener>();
    opener->add(faulty_);
    return std::make_unique<WeightSource>("safetensors", "faulty.safetensors", std::move(c), opener);
  }
  LoadReport load(const WeightSource& source, Model& model, IoOptions io = {}) {
    auto loader = WeightLoaderRegistry::with_builtins()->create("local");
    io.concurrency = 2;
    io.chunk_bytes = 4096;  // many extents, so that failures land in the middle of a load
    loader->options().io = io;
    return loader->load_weights(model, source);
  }
  Model model_for(const WeightSource& source) { return WeightLoaderRegistry::with_builtins()->create("local")->mirror_model(source); }

  std::string bytes_ = checkpoint_bytes();
  std::shared_ptr<FaultySource> faulty_;
};

TEST_F(FaultySourceLoad, ShortReadsStillLoadEveryValueExactly) {
  auto source = open({.max_read_bytes = 7});
  Model model = model_for(*source);
  const LoadReport report = load(*source, model);
  EXPECT_EQ(report.loaded.size(), 8u);
  EXPECT_EQ(report.io_mode, "pread");  // no descriptor, no mapping: positioned reads
  EXPECT_GT(faulty_->reads(), 8u * 64 * 100 * 4 / 7);
  for (int i = 0; i < 8; ++i) {
    const float* v = model.find("w" + std::to_string(i))->data.data<float>();
    EXPECT_EQ(v[0], float(i * 10000));
    EXPECT_EQ(v[6399], float(i * 10000 + 6399));
  }
}

TEST_F(FaultySourceLoad, AFailedReadNamesTheSourceAndTheTensorAndKeepsItsRetryability) {
  for (bool retryable : {true, false}) {
    auto source = open({.fail_at_read = 5, .retryable = retryable});
    Model model = model_for(*source);
    const size_t threads_before = thread_count();
    try {
      load(*source, model);
      FAIL() << "the load should fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Io);
      EXPECT_EQ(e.file(), "faulty.safetensors");
      EXPECT_TRUE(e.tensor().starts_with("w")) << e.what();
      EXPECT_NE(e.message().find("injected failure of read 5"), std::string::npos) << e.what();
      EXPECT_EQ(e.retryable(), retryable);
    }
    EXPECT_EQ(thread_count(), threads_before);  // every reader joined
  }
}

TEST_F(FaultySourceLoad, EveryReaderStopsAfterTheFirstFailure) {
  auto source = open({.fail_at_read = 3, .fail_every_read_after = true, .delay = std::chrono::microseconds(200)});
  Model model = model_for(*source);
  test::expect_error(ErrorCode::Io, [&] { load(*source, model); });
  // Each of the 2 readers fails at most once after the first failure instead of reading on.
  EXPECT_LE(faulty_->reads(), 3u + 2u);
}

TEST_F(FaultySourceLoad, ACancelledLoadStopsEveryReader) {
  auto source = open({.delay = std::chrono::microseconds(500)});
  Model model = model_for(*source);
  IoOptions io;
  std::atomic<int> calls{0};
  io.progress = [&](uint64_t, uint64_t) { return ++calls < 3; };
  const size_t threads_before = thread_count();
  const std::string msg = test::expect_error(ErrorCode::Cancelled, [&] { load(*source, model, io); });
  EXPECT_NE(msg.find("cancelled"), std::string::npos);
  EXPECT_EQ(thread_count(), threads_before);
  // Far fewer reads than the whole checkpoint's 50 extents of 4 KiB.
  EXPECT_LT(faulty_->reads(), 20u);
  EXPECT_EQ(calls.load(), 3);  // no progress reported after the cancel
}

TEST_F(FaultySourceLoad, ASourceThatChangesUnderneathGivesOtherBytesOnTheSecondRead) {
  auto source = open({.corrupt_from_read = 2});
  const TensorInfo& t = source->at("w1");
  std::vector<float> first(64 * 100), second(64 * 100);
  source->read(t, DType::F32, first.data());
  source->read(t, DType::F32, second.data());
  EXPECT_EQ(first[1], 10001.0f);
  EXPECT_NE(std::memcmp(first.data(), second.data(), first.size() * 4), 0);
}

TEST_F(FaultySourceLoad, ATruncatedReadIsTruncatedNamingTheTensor) {
  // The catalogue promises more bytes than the source now has.
  auto clean = memory_source("short.safetensors", MemoryRegion::of_string(bytes_));
  auto opener = std::make_shared<MemoryOpener>();
  opener->add(clean);
  Catalogue c = safetensors_format().read_catalogue(*clean, *opener);
  auto shrunk = std::make_shared<MemoryOpener>();
  shrunk->add("short.safetensors", MemoryRegion::of_string(bytes_.substr(0, bytes_.size() - 100)));
  WeightSource source("safetensors", "short.safetensors", Catalogue{c.files, std::move(c.tensors), {}}, shrunk);
  Model model = model_for(source);
  for (const char* io : {"pread", "mmap"}) {
    auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"io", std::string(io)}});
    try {
      loader->load_weights(model, source);
      FAIL() << io;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Truncated) << io << ": " << e.what();
      EXPECT_EQ(e.file(), "short.safetensors");
      EXPECT_EQ(e.tensor(), "w7") << io;
    }
  }
}

}  // namespace
}  // namespace wl
