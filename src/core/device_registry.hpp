// The copy engines of a context's CUDA devices: the CUDA component's (with_cuda_devices(),
// src/cuda), or in tests the emulated device's.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "core/copy_engine.hpp"
#include "weightloader/device.hpp"

namespace wl {

// Makes the engine of CUDA device `index`; throws wl::Error when it cannot be used.
using CopyEngineFactory = std::function<std::shared_ptr<CopyEngine>(int index)>;

class DeviceEngines {
 public:
  explicit DeviceEngines(CopyEngineFactory cuda) : cuda_(std::move(cuda)) {}
  // The engine of a CUDA device, made once per device.
  std::shared_ptr<CopyEngine> engine(const Device& device) const;

 private:
  CopyEngineFactory cuda_;
  mutable std::mutex mutex_;
  mutable std::map<int, std::shared_ptr<CopyEngine>> engines_;
};

// engines->engine(device); InvalidArgument naming the device when `engines` is null.
std::shared_ptr<CopyEngine> copy_engine(const Device& device, const DeviceEngines* engines);

}  // namespace wl
