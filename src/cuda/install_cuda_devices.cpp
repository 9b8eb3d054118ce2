#include "core/device_registry.hpp"
#include "cuda/cuda_copy_engine.hpp"
#include "weightloader/cuda.hpp"

namespace wl {

void install_cuda_devices() {
  install_cuda_engine_factory([](int index) { return std::make_shared<CudaCopyEngine>(index); });
}

int cuda_device_count(std::string& why) { return CudaCopyEngine::device_count(why); }

}  // namespace wl
