#include "bind/bindings.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "weightloader's C++ library (use the weightloader package, not this module directly)";
  wl::py::register_errors(m);
  wl::py::register_sources(m);
  wl::py::register_loaders(m);
  wl::py::register_llm(m);
  wl::py::register_writers(m);
}
