#include "weightloader/device.hpp"

#include <charconv>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/device_registry.hpp"
#include "weightloader/error.hpp"
#include "weightloader/tensor.hpp"

namespace wl {
namespace {

struct Registry {
  std::mutex mutex;
  CopyEngineFactory factory;
  std::map<int, std::shared_ptr<CopyEngine>> engines;
};

Registry& registry() {
  static Registry r;
  return r;
}

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

void install_cuda_engine_factory(CopyEngineFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factory = std::move(factory);
  r.engines.clear();
}

std::shared_ptr<CopyEngine> copy_engine(const Device& device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.factory)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("device {}: this build has no CUDA support (the CUDA toolkit was not found when it was "
                            "configured)",
                            device.name()));
  std::shared_ptr<CopyEngine>& engine = r.engines[device.index];
  if (!engine) engine = r.factory(device.index);
  return engine;
}

std::shared_ptr<Storage> allocate_device_storage(const Device& device, size_t bytes) {
  if (device.is_cpu()) return allocate_storage(bytes);
  return std::make_shared<DeviceStorage>(copy_engine(device), device, bytes);
}

bool device_available(const Device& device, std::string* why) {
  if (device.is_cpu()) return true;
  try {
    copy_engine(device);
    return true;
  } catch (const Error& e) {
    if (why) *why = e.message();
    return false;
  }
}

}  // namespace wl
