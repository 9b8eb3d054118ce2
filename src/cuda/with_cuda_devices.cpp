#include "core/device_registry.hpp"
#include "cuda/cuda_copy_engine.hpp"
#include "weightloader/cuda.hpp"

namespace wl {

Context with_cuda_devices(Context base) {
  base.devices = std::make_shared<DeviceEngines>([](int index) { return std::make_shared<CudaCopyEngine>(index); });
  return base;
}

int cuda_device_count(std::string& why) { return CudaCopyEngine::device_count(why); }

}  // namespace wl
