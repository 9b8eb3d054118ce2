// Quantized layers decoded into device memory (the emulated device behind the copy-engine seam):
// the staged, delivered path gives the bytes a host read gives, whole and sliced.
#include <gtest/gtest.h>

#include <cstring>

#include "core/device_registry.hpp"
#include "support/emulated_device.hpp"
#include "test_util.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TEST(QuantizedDevice, DecodedLayersReachDeviceMemoryAsOnTheHost) {
  WL_REQUIRE_TESTDATA();
  auto device = std::make_shared<EmulatedDevice>(4 << 20, 2);
  IoOptions io;
  io.device = Device::parse("cuda");
  io.devices = std::make_shared<DeviceEngines>([&](int) -> std::shared_ptr<CopyEngine> { return device; });
  for (const char* folder : {"gptq-falcon3-1b-int4", "awq-falcon3-1b", "bnb-nf4-dq-llama3.2-1b", "fp8-block-qwen3-1.7b"}) {
    SCOPED_TRACE(folder);
    auto source = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(
        (test::testdata_dir() / "quantized" / folder / "quantized.safetensors").string());
    const TensorInfo& t = source->tensors()[0];
    const TensorView host = source->load(t, DType::BF16);
    source->read_all({ReadRequest{&t, {}, DType::BF16, device->address(0)}}, io);
    EXPECT_EQ(std::memcmp(device->contents(), host.raw(), host.nbytes()), 0);
    // Rows [1, 2) of dim 0 land in device memory too (decoded whole, delivered in one run).
    const uint64_t row = host.nbytes() / t.shape[0];
    source->read_all({ReadRequest{&t, Slice{0, 1, 2}, DType::BF16, device->address(1 << 20)}}, io);
    EXPECT_EQ(std::memcmp(device->contents() + (1 << 20), host.raw() + row, row), 0);
  }
  EXPECT_EQ(device->violations(), std::vector<std::string>{});
}

}  // namespace
}  // namespace wl
