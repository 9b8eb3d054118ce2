// Loads into device parameters through the public API (LoadOptions::io.device, mirror_model), on
// the emulated device installed in place of CUDA's copy engine.
#include <gtest/gtest.h>

#include <cstring>

#include "core/device_registry.hpp"
#include "support/emulated_device.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

class DeviceLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    context_.devices = std::make_shared<DeviceEngines>([this](int index) -> std::shared_ptr<CopyEngine> {
      if (index != 0) throw Error(ErrorCode::InvalidArgument, "no such emulated device");
      return device_;
    });
    SynthOptions synth;
    synth.shape = LlamaShape::preset("tiny");
    write_synthetic_llama(dir_.path().string(), synth);
  }
  std::unique_ptr<WeightLoader> loader(const Kwargs& extra) const {
    LoaderChoice choice = detect_loader(dir_.path().string());
    for (const auto& [k, v] : extra) choice.kwargs[k] = v;
    auto made = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
    made->options().context = context_;
    return made;
  }
  const std::byte* on_host(const Parameter& p) const {
    return device_->contents() + (p.data.raw() - device_->address(0));
  }

  std::shared_ptr<EmulatedDevice> device_ = std::make_shared<EmulatedDevice>(64 << 20, 2);
  Context context_;  // the emulated device in place of CUDA's copy engine
  test::TempDir dir_;
};

TEST_F(DeviceLoad, AMirroredModelOnTheDeviceHoldsWhatAHostLoadHolds) {
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    auto host_loader = loader({{"dtype", dtype}});
    auto source = host_loader->get_weights(dir_.path().string());
    Model host = host_loader->mirror_model(*source);
    host_loader->load_weights(host, *source);

    auto device_loader = loader({{"dtype", dtype}, {"device", "cuda"}, {"staging_bytes", "1048576"}});
    Model model = device_loader->mirror_model(*source);
    const LoadReport report = device_loader->load_weights(model, *source);
    EXPECT_EQ(report.loaded.size(), host.parameters().size());
    for (const Parameter& p : model.parameters()) {
      SCOPED_TRACE(p.name);
      EXPECT_EQ(p.data.storage()->device().name(), "cuda:0");
      ASSERT_EQ(std::memcmp(on_host(p), host.find(p.name)->data.raw(), p.data.nbytes()), 0);
    }
  }
  EXPECT_EQ(device_->violations(), std::vector<std::string>{});
  EXPECT_LE(device_->pinned_peak(), 1048576u);
}

TEST_F(DeviceLoad, ParametersOnAnotherDeviceThanTheLoadsAreRefusedByName) {
  auto device_loader = loader({{"device", "cuda:0"}});
  auto source = device_loader->get_weights(dir_.path().string());
  Model host = loader({})->mirror_model(*source);  // host memory
  try {
    device_loader->load_weights(host, *source);
    FAIL() << "host parameters must not be loaded as device ones";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_FALSE(e.tensor().empty());
    EXPECT_NE(std::string(e.what()).find("on cpu but the load is into cuda:0"), std::string::npos) << e.what();
  }
}

TEST_F(DeviceLoad, DeviceNamesAreChecked) {
  EXPECT_EQ(Device::parse("cuda:3").index, 3);
  EXPECT_EQ(Device::parse("cpu").name(), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "CUDA"}) EXPECT_THROW(Device::parse(bad), Error) << bad;
  try {
    loader({{"device", "tpu"}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidKwarg);
  }
  auto no_such = loader({{"device", "cuda:1"}});
  auto source = no_such->get_weights(dir_.path().string());
  EXPECT_THROW(no_such->mirror_model(*source), Error);
}

TEST_F(DeviceLoad, AContextWithoutCudaSaysSo) {
  std::string why;
  EXPECT_FALSE(device_available(Device::parse("cuda"), nullptr, &why));
  EXPECT_NE(why.find("no CUDA support"), std::string::npos) << why;
  EXPECT_TRUE(device_available(Device::parse("cpu"), nullptr));
  EXPECT_TRUE(device_available(Device::parse("cuda"), context_.devices.get()));
  // A loader given no context has no devices: its mirror on cuda is refused, naming the device.
  auto plain = WeightLoaderRegistry::with_builtins()->create("local", {{"device", "cuda"}});
  auto source = plain->get_weights(dir_.path().string());
  const std::string message = test::expect_error(ErrorCode::InvalidArgument, [&] { plain->mirror_model(*source); });
  EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
}

}  // namespace
}  // namespace wl
