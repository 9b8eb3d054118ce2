// The CUDA component (built when the CUDA toolkit is found at configure time: WL_WITH_CUDA).
#pragma once

#include <string>

#include "weightloader/context.hpp"
#include "weightloader/export.hpp"

namespace wl {

// `base` in which "cuda" and "cuda:N" devices can hold parameters (weightloader/device.hpp):
// their copy engines, each made when first used.
WL_API Context with_cuda_devices(Context base);

// How many CUDA devices this machine has; 0 with the runtime's reason in `why` (no driver, none).
WL_API int cuda_device_count(std::string& why);

}  // namespace wl
