// The optional components a program was built with, added to a context: http://, https:// and
// s3:// names and hub downloads (weightloader_remote), CUDA devices (weightloader_cuda). Inline, so
// that it sees the program's own WL_WITH_REMOTE / WL_WITH_CUDA (set by the targets it links).
#pragma once

#include "weightloader/context.hpp"
#ifdef WL_WITH_REMOTE
#include "weightloader/remote.hpp"
#endif
#ifdef WL_WITH_CUDA
#include "weightloader/cuda.hpp"
#endif

namespace wl {

inline Context with_linked_components(Context base = {}) {
#ifdef WL_WITH_REMOTE
  base = with_remote(std::move(base));
#endif
#ifdef WL_WITH_CUDA
  base = with_cuda_devices(std::move(base));
#endif
  return base;
}

}  // namespace wl
