// Zero-copy tensors for Python's safe_open: a tensor's stored bytes, where the library's rule lets
// them be used as they are (stored_view), as a writable Python buffer over a private copy-on-write
// mapping of its local file. One mapping per file per reader: every tensor of a reader shares it (a
// write to one is seen by another view of the same bytes from that reader), no write reaches the
// file or another reader, and each buffer keeps the mapping alive (after the reader is closed and
// the file is deleted).
#include <map>
#include <mutex>
#include <optional>

#include "bind/bindings.hpp"
#include "core/file.hpp"
#include "loaders/zero_copy.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

// Bytes of a mapping as a Python buffer (torch.frombuffer and np.frombuffer keep it, and so the
// mapping, alive).
struct MappedBytes {
  TensorView bytes;
};

class PrivateViews {
 public:
  explicit PrivateViews(std::shared_ptr<WeightSource> source) : source_(std::move(source)) {}

  // The tensor's bytes for reading it as `dtype`, or None where they must be read instead (the rule
  // says no, the file is not local, or the tensor is empty: the frameworks view no empty buffer).
  std::optional<MappedBytes> view(const std::string& name, const std::string& dtype) {
    const TensorInfo& t = source_->at(name);
    if (t.nbytes == 0 || !stored_view(t, *source_, dtype_from_name(dtype))) return std::nullopt;
    const std::shared_ptr<Storage> file = mapping(t.file);
    if (!file) return std::nullopt;
    return MappedBytes{TensorView(file, DType::U8, {t.nbytes}, t.offset)};
  }

 private:
  // The reader's private mapping of `file`, made on first use; null when it is no local file.
  std::shared_ptr<Storage> mapping(const std::string& file) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = maps_.try_emplace(file);
    if (fresh) {
      const std::shared_ptr<ByteSource> bytes = source_->opener()->open(file);
      if (const auto* local = dynamic_cast<const File*>(bytes.get())) it->second = local->private_copy();
    }
    return it->second;
  }

  std::shared_ptr<WeightSource> source_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Storage>> maps_;
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
