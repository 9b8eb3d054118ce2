#include "bind/bindings.hpp"
#include "weightloader/linked_components.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "weightloader's C++ library (use the weightloader package, not this module directly)";
  m.attr("__version__") = WL_VERSION;  // the CMake project version
  wl::py::register_errors(m);
  wl::py::register_report(m);
  wl::py::register_sources(m);
  wl::py::register_loaders(m);
  wl::py::register_llm(m);
  wl::py::register_writers(m);
  wl::py::register_host_memory(m);
  wl::py::register_tensor_parallel(m);
  wl::py::register_communicator(m);
  wl::py::register_plan(m);
}

namespace wl::py {

const Context& module_context() {
  static const Context context = with_linked_components();
  return context;
}

const WeightLoaderRegistry& module_registry() {
  static const std::unique_ptr<WeightLoaderRegistry> registry = WeightLoaderRegistry::with_builtins(module_context());
  return *registry;
}

}  // namespace wl::py
