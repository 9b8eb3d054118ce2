// The CUDA component (built when the CUDA toolkit is found at configure time: WL_WITH_CUDA).
#pragma once

#include <string>

#include "weightloader/export.hpp"

namespace wl {

// Makes "cuda" and "cuda:N" devices usable (weightloader/device.hpp). Programs call it once at start.
WL_API void install_cuda_devices();

// How many CUDA devices this machine has; 0 with the runtime's reason in `why` (no driver, none).
WL_API int cuda_device_count(std::string& why);

}  // namespace wl
