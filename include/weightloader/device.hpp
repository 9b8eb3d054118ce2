// Where parameters live: host memory ("cpu") or a CUDA device ("cuda", "cuda:N"). Loads into a
// device read on the host, convert there and copy through pinned buffers (see README, Devices).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "weightloader/export.hpp"

namespace wl {

class Storage;
// The copy engines of a context's devices (Context::devices; with_cuda_devices() makes them).
class DeviceEngines;

struct WL_API Device {
  enum class Kind { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  int index = 0;

  // "cpu", "cuda" (device 0) or "cuda:N"; InvalidArgument otherwise.
  static Device parse(std::string_view text);
  std::string name() const;  // "cpu", "cuda:0"
  bool is_cpu() const noexcept { return kind == Kind::Cpu; }
  bool operator==(const Device&) const = default;
};

// `bytes` of memory on `device`, not zeroed (heap memory for "cpu"), through `engines` (null:
// the CPU only). InvalidArgument when there is no engine for the device or it cannot be used; Io
// when it is out of memory.
WL_API std::shared_ptr<Storage> allocate_device_storage(const Device& device, size_t bytes, const DeviceEngines* engines);

// Whether `device` can be used through `engines` on this machine; if not, why not.
WL_API bool device_available(const Device& device, const DeviceEngines* engines, std::string* why = nullptr);

}  // namespace wl
