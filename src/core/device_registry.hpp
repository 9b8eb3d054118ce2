// Which copy engine serves CUDA devices: the CUDA component installs its own
// (install_cuda_devices(), src/cuda); tests install the emulated device instead.
#pragma once

#include <functional>
#include <memory>

#include "core/copy_engine.hpp"
#include "weightloader/device.hpp"

namespace wl {

// Makes the engine of CUDA device `index`; throws wl::Error when it cannot be used.
using CopyEngineFactory = std::function<std::shared_ptr<CopyEngine>(int index)>;

// Replaces the factory (and forgets the engines it made); an empty one uninstalls it.
void install_cuda_engine_factory(CopyEngineFactory factory);

// The engine of a CUDA device, made once per device; InvalidArgument when none is installed.
std::shared_ptr<CopyEngine> copy_engine(const Device& device);

}  // namespace wl
