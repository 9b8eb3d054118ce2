// Zero-copy tensors for Python (safe_open, and load_into's zero_copy=True where the module's
// tensors may be replaced): a tensor's stored bytes, where the library's rule lets them be used as
// they are (stored_view), as a writable Python buffer over a private copy-on-write mapping of its
// local file. One mapping per file per reader (or load): every tensor of it shares that mapping (a
// write to one is seen by another view of the same bytes from it), no write reaches the file or
// another reader, and each buffer keeps the mapping alive (after the reader is closed and the file
// is deleted).
#include <optional>

#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "core/file.hpp"
#include "loaders/zero_copy.hpp"
#include "weightloader/error.hpp"

namespace wl::py {

namespace pyb = pybind11;

std::optional<MappedBytes> PrivateMappings::bytes(const TensorInfo& t) {
  if (t.nbytes == 0) return std::nullopt;  // the frameworks view no empty buffer
  std::lock_guard lock(mutex_);
  if (t.source >= files_.size())
    throw Error(ErrorCode::InvalidArgument, fmt::format("file index {} is not one of the {} files of its catalogue", t.source, files_.size()),
                {}, t.name);
  auto [it, fresh] = maps_.try_emplace(t.source);
  if (fresh) {
    const std::shared_ptr<ByteSource> bytes = opener_->open(files_[t.source]);
    if (const auto* local = dynamic_cast<const File*>(bytes.get())) it->second = local->private_copy();
  }
  if (!it->second) return std::nullopt;
  return MappedBytes{TensorView(it->second, DType::U8, {t.nbytes}, t.offset)};
}

namespace {

class PrivateViews {
 public:
  explicit PrivateViews(std::shared_ptr<WeightSource> source) : source_(std::move(source)), maps_(*source_) {}

  // The tensor's bytes for reading it as `dtype`, or None where they must be read instead (the rule
  // says no, the file is not local, or the tensor is empty).
  std::optional<MappedBytes> view(const std::string& name, const std::string& dtype) {
    const TensorInfo& t = source_->at(name);
    if (!stored_view(t, *source_, dtype_from_name(dtype))) return std::nullopt;
    return maps_.bytes(t);
  }

 private:
  std::shared_ptr<WeightSource> source_;
  PrivateMappings maps_;
};

}  // namespace

void register_private_views(pyb::module_& m) {
  pyb::class_<MappedBytes>(m, "MappedBytes", pyb::buffer_protocol()).def_buffer([](MappedBytes& b) {
    return pyb::buffer_info(b.bytes.raw(), 1, "B", 1, {static_cast<pyb::ssize_t>(b.bytes.nbytes())}, {1}, false);
  });
  pyb::class_<PrivateViews>(m, "PrivateViews")
      .def(pyb::init<std::shared_ptr<WeightSource>>(), pyb::arg("source"))
      .def("view", &PrivateViews::view, pyb::arg("name"), pyb::arg("dtype"));
}

}  // namespace wl::py
