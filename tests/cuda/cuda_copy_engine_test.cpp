// The CUDA copy engine and loads into CUDA device memory, checked by copying the device's memory
// back. Every test skips, saying why, when the machine has no CUDA device or driver.
#include "cuda/cuda_copy_engine.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "core/device_destination.hpp"
#include "weightloader/cuda.hpp"
#include "weightloader/error.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(why) == 0) GTEST_SKIP() << "no CUDA device here (" << why << ")";
  }
  const Context context_ = with_cuda_devices({});
};

std::vector<std::byte> copy_back(const std::byte* device, uint64_t n) {
  std::vector<std::byte> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST_F(Cuda, RingCopiesArriveIntact) {
  CudaCopyEngine engine(0);
  const DeviceDestination ring(engine, 1 << 20, 64 << 10);
  std::vector<std::byte> values(5 << 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::byte(i * 31 + i / 4096);
  std::byte* dst = engine.alloc_device(values.size());
  ring.deliver(dst, values.data(), values.size(), "w");
  ring.drain();
  EXPECT_EQ(copy_back(dst, values.size()), values);
  engine.free_device(dst);
}

TEST_F(Cuda, OutOfDeviceMemoryIsAnError) {
  CudaCopyEngine engine(0);
  try {
    engine.alloc_device(uint64_t(1) << 50);
    FAIL() << "a petabyte cannot be allocated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

TEST_F(Cuda, NoSuchDeviceIsAnError) {
  EXPECT_THROW(CudaCopyEngine(1 << 20), Error);
}

// The public path: a loader's model mirrored on cuda:0, in F32 and in BF16, equals a host load.
TEST_F(Cuda, LoadsIntoDeviceParametersAsOnTheHost) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "wl_cuda_test_ckpt";
  SynthOptions synth;
  synth.shape = LlamaShape::preset("tiny");
  write_synthetic_llama(dir.string(), synth);
  for (DType dtype : {DType::F32, DType::BF16}) {
    const LoaderChoice choice = detect_loader(dir.string());
    auto host_loader = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
    host_loader->dtype() = dtype;
    auto source = host_loader->get_weights(dir.string());
    Model host = host_loader->mirror_model(*source);
    host_loader->load_weights(host, *source);

    auto loader = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
    loader->dtype() = dtype;
    loader->options().context = context_;
    loader->options().io.device = Device::parse("cuda:0");
    loader->options().io.staging_bytes = 1 << 20;  // many trips around the ring
    Model on_device = loader->mirror_model(*source);
    const LoadReport report = loader->load_weights(on_device, *source);
    EXPECT_EQ(report.loaded.size(), host.parameters().size());
    for (const Parameter& p : on_device.parameters()) {
      SCOPED_TRACE(p.name);
      ASSERT_EQ(p.data.storage()->device(), Device::parse("cuda:0"));
      const Parameter* expected = host.find(p.name);
      ASSERT_NE(expected, nullptr);
      const std::vector<std::byte> got = copy_back(p.data.raw(), p.data.nbytes());
      ASSERT_EQ(std::memcmp(got.data(), expected->data.raw(), got.size()), 0);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_F(Cuda, HostParametersCannotBeLoadedAsDeviceOnes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "wl_cuda_test_host";
  SynthOptions synth;
  synth.shape = LlamaShape::preset("tiny");
  write_synthetic_llama(dir.string(), synth);
  const LoaderChoice choice = detect_loader(dir.string());
  auto loader = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
  auto source = loader->get_weights(dir.string());
  Model host = loader->mirror_model(*source);
  loader->options().context = context_;
  loader->options().io.device = Device::parse("cuda");
  EXPECT_THROW(loader->load_weights(host, *source), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wl
