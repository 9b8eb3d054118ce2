#include "bind/bindings.hpp"
#ifdef WL_WITH_REMOTE
#include "weightloader/remote.hpp"
#endif
#ifdef WL_WITH_CUDA
#include "weightloader/cuda.hpp"
#endif

PYBIND11_MODULE(_core, m) {
  m.doc() = "weightloader's C++ library (use the weightloader package, not this module directly)";
  m.attr("__version__") = WL_VERSION;  // the CMake project version
  wl::py::register_errors(m);
  wl::py::register_sources(m);
  wl::py::register_loaders(m);
  wl::py::register_llm(m);
  wl::py::register_writers(m);
  wl::py::register_host_memory(m);
  wl::py::register_tensor_parallel(m);
#ifdef WL_WITH_REMOTE
  wl::install_remote_openers();  // http://, https:// and s3:// names wherever a path goes
#endif
#ifdef WL_WITH_CUDA
  wl::install_cuda_devices();  // load_into fills torch CUDA tensors in place
#endif
}
