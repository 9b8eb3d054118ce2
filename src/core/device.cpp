#include "weightloader/device.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/device_registry.hpp"
#include "weightloader/error.hpp"
#include "weightloader/tensor.hpp"

namespace wl {
namespace {

// Device memory; keeps its engine alive.
class DeviceStorage final : public Storage {
 public:
  DeviceStorage(std::shared_ptr<CopyEngine> engine, Device device, size_t bytes)
      : engine_(std::move(engine)), device_(device) {
    data_ = bytes ? engine_->alloc_device(bytes) : nullptr;
    size_ = bytes;
    writable_ = true;
  }
  ~DeviceStorage() override {
    if (data_) engine_->free_device(data_);
  }
  std::string describe() const override { return fmt::format("{} {} bytes", device_.name(), size_); }
  Device device() const override { return device_; }

 private:
  std::shared_ptr<CopyEngine> engine_;
  Device device_;
};

}  // namespace

Device Device::parse(std::string_view text) {
  if (text == "cpu") return {};
  if (text == "cuda") return {Kind::Cuda, 0};
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc{} && end == digits.data() + digits.size() && index >= 0 && !digits.empty()) return {Kind::Cuda, index};
  }
  throw Error(ErrorCode::InvalidArgument, fmt::format("device '{}': expected cpu, cuda or cuda:N", text));
}

std::string Device::name() const { return is_cpu() ? "cpu" : fmt::format("cuda:{}", index); }

std::shared_ptr<CopyEngine> DeviceEngines::engine(const Device& device) const {
  std::lock_guard lock(mutex_);
  std::shared_ptr<CopyEngine>& engine = engines_[device.index];
  if (!engine) engine = cuda_(device.index);
  return engine;
}

std::shared_ptr<CopyEngine> copy_engine(const Device& device, const DeviceEngines* engines) {
  if (!engines)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("device {}: no CUDA support here (a build without the CUDA toolkit, or a context without "
                            "with_cuda_devices())",
                            device.name()));
  return engines->engine(device);
}

std::shared_ptr<Storage> allocate_device_storage(const Device& device, size_t bytes, const DeviceEngines* engines) {
  if (device.is_cpu()) return allocate_storage(bytes);
  return std::make_shared<DeviceStorage>(copy_engine(device, engines), device, bytes);
}

bool device_available(const Device& device, const DeviceEngines* engines, std::string* why) {
  if (device.is_cpu()) return true;
  try {
    copy_engine(device, engines);
    return true;
  } catch (const Error& e) {
    if (why) *why = e.message();
    return false;
  }
}

}  // namespace wl
