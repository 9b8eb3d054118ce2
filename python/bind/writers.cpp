// Writers for Python: a safetensors file written by the library's writer (atomic: the file appears
// whole or not at all; names checked) straight from the memory of torch tensors or NumPy arrays,
// with the GIL released while the bytes go out; or the same bytes as a bytes object (save()).
#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "bind/interruptible.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

// entries: (name, dtype, shape, data pointer, nbytes) for every tensor, contiguous, in the order
// they are to be stored. The owners of the memory must outlive the call (the caller's list does).
// `path` names the output in errors.
std::vector<std::pair<std::string, TensorView>> to_tensors(const std::string& path, const pyb::list& entries) {
  std::vector<std::pair<std::string, TensorView>> tensors;
  tensors.reserve(entries.size());
  for (const pyb::handle h : entries) {
    const auto e = h.cast<pyb::tuple>();
    if (e.size() != 5) throw Error(ErrorCode::InvalidArgument, "an entry is (name, dtype, shape, data pointer, nbytes)");
    const std::string name = e[0].cast<std::string>();
    const DType dtype = dtype_from_name(e[1].cast<std::string>());
    const Shape shape = e[2].cast<Shape>();
    const uint64_t nbytes = e[4].cast<uint64_t>();
    if (shape_numel(shape) * dtype_size(dtype) != nbytes)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("{} bytes given for {} {}", nbytes, dtype_name(dtype), shape_to_string(shape)), path, name);
    const auto* data = reinterpret_cast<const std::byte*>(e[3].cast<uintptr_t>());
    if (!data && nbytes) throw Error(ErrorCode::InvalidArgument, "a null data pointer", path, name);
    auto storage = std::make_shared<BorrowedStorage>(const_cast<std::byte*>(data), nbytes, false);  // read only
    tensors.emplace_back(name, TensorView(std::move(storage), dtype, shape));
  }
  return tensors;
}

void write_file(const std::string& path, const pyb::list& entries, const std::map<std::string, std::string>& metadata,
                bool tensor_digests) {
  const auto tensors = to_tensors(path, entries);
  // Ctrl-C is raised once the file is whole.
  Interruptible().run([&] { write_safetensors(path, tensors, metadata, tensor_digests); });
}

// The file's bytes as a Python bytes object, written straight into its buffer (one copy of the data).
pyb::bytes serialize(const pyb::list& entries, const std::map<std::string, std::string>& metadata) {
  const auto tensors = to_tensors("(in memory)", entries);
  pyb::object out = pyb::none();
  serialize_safetensors(tensors, metadata, false, [&](uint64_t size) {
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
    if (!bytes) throw pyb::error_already_set();
    out = pyb::reinterpret_steal<pyb::object>(bytes);
    return reinterpret_cast<std::byte*>(PyBytes_AS_STRING(bytes));
  });
  return pyb::reinterpret_borrow<pyb::bytes>(out);
}

}  // namespace

void register_writers(pyb::module_& m) {
  m.def("write_safetensors", &write_file, pyb::arg("path"), pyb::arg("entries"),
        pyb::arg("metadata") = std::map<std::string, std::string>{}, pyb::arg("tensor_digests") = false,
        "Writes a safetensors file from (name, dtype, shape, data pointer, nbytes) entries, in their order; "
        "tensor_digests: and each tensor's sha256 in its __metadata__ (what refresh compares).");
  m.def("serialize_safetensors", &serialize, pyb::arg("entries"), pyb::arg("metadata") = std::map<std::string, std::string>{},
        "The bytes write_safetensors would write, as bytes, without a file.");
}

}  // namespace wl::py
