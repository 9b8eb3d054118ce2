// Memory that weightloader allocates for Python (the parameters of a module built on torch's meta
// device): huge-page backed above 2 MiB like the engine's own, so a load faults it 2 MiB at a time
// instead of torch's 4 KiB. Exposed as a buffer; torch.frombuffer keeps it alive.
#include "bind/bindings.hpp"
#include "weightloader/tensor.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

struct HostMemory {
  TensorView bytes;
};

}  // namespace

void register_host_memory(pyb::module_& m) {
  pyb::class_<HostMemory>(m, "HostMemory", pyb::buffer_protocol())
      .def_buffer([](HostMemory& h) {
        return pyb::buffer_info(h.bytes.raw(), 1, "B", 1, {static_cast<pyb::ssize_t>(h.bytes.nbytes())}, {1}, false);
      });
  m.def("host_memory", [](uint64_t nbytes) { return HostMemory{TensorView::empty(DType::U8, {nbytes})}; },
        pyb::arg("nbytes"), "nbytes of writable host memory (huge-page backed from 2 MiB), uninitialised");
}

}  // namespace wl::py
