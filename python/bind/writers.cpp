// Writers for Python: a safetensors file written by the library's writer (atomic: the file appears
// whole or not at all; names checked) straight from the memory of torch tensors or NumPy arrays,
// with the GIL released while the bytes go out.
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
void write_file(const std::string& path, const pyb::list& entries, const std::map<std::string, std::string>& metadata,
                bool tensor_digests) {
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
  // Ctrl-C is raised once the file is whole.
  Interruptible().run([&] { write_safetensors(path, tensors, metadata, tensor_digests); });
}

}  // namespace

void register_writers(pyb::module_& m) {
  m.def("write_safetensors", &write_file, pyb::arg("path"), pyb::arg("entries"),
        pyb::arg("metadata") = std::map<std::string, std::string>{}, pyb::arg("tensor_digests") = false,
        "Writes a safetensors file from (name, dtype, shape, data pointer, nbytes) entries, in their order; "
        "tensor_digests: and each tensor's sha256 in its __metadata__ (what refresh compares).");
}

}  // namespace wl::py
