// Catalogues for Python: a WeightSource's names, shapes and metadata, reads straight into a
// caller's buffer (a torch tensor's or NumPy array's memory) with the GIL released, sources over
// Python memory (tensors, bytes) that keep their owners alive, and what the safetensors drop-in
// needs of a header beyond the catalogue.
#include <cstring>

#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "bind/interruptible.hpp"
#include "core/named_errors.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/slice_reads.hpp"

namespace wl::py {

namespace pyb = pybind11;

std::shared_ptr<const void> keep_alive(pyb::object owner) {
  auto* held = new pyb::object(std::move(owner));
  return std::shared_ptr<const void>(held, [](const void* p) {
    pyb::gil_scoped_acquire gil;  // the last holder may be a reader thread
    delete static_cast<const pyb::object*>(p);
  });
}

DType dtype_from_name(const std::string& name) {
  if (auto d = parse_dtype_alias(name)) return *d;
  throw Error(ErrorCode::UnsupportedDType, fmt::format("unknown dtype '{}'", name));
}

namespace {

using SourcePtr = std::shared_ptr<WeightSource>;

pyb::dict tensor_info(const WeightSource& source, const TensorInfo& t) {
  pyb::dict d;
  d["name"] = t.name;
  d["dtype"] = std::string(dtype_name(t.dtype));
  d["shape"] = t.shape;
  d["stored_type"] = t.stored_type();
  d["file"] = source.file_of(t);
  d["offset"] = t.offset;
  d["nbytes"] = t.nbytes;
  d["raw"] = !t.decoder && t.strides.empty() && t.row_order.empty();
  return d;
}

// A request to read slice `s` of `t` as `to` into [ptr, ptr + nbytes), once the room is checked.
ReadRequest checked_request(const WeightSource& source, const TensorInfo& t, const Slice& s, DType to, uintptr_t ptr, uint64_t nbytes) {
  const uint64_t need = shape_numel(source.slice_shape(t, s)) * dtype_size(to);
  if (need != nbytes)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the destination holds {} bytes; {} are needed", nbytes, need),
                source.file_of(t), t.name);
  return ReadRequest{&t, s, to, reinterpret_cast<void*>(ptr)};
}

// Reads (a slice of) `name` as `dtype` into [ptr, ptr + nbytes) on `device` ("cpu", "cuda:N"), checking
// the room first.
void read_into(const WeightSource& source, const std::string& name, const std::string& dtype, uintptr_t ptr,
               uint64_t nbytes, std::optional<std::tuple<size_t, uint64_t, uint64_t>> slice, const std::string& device) {
  const Device where = Device::parse(device);
  Slice s;
  if (slice) s = Slice{std::get<0>(*slice), std::get<1>(*slice), std::get<2>(*slice)};
  const ReadRequest request = checked_request(source, source.at(name), s, dtype_from_name(dtype), ptr, nbytes);
  // WeightSource::read's settings (one thread, positioned reads, no prefault pass), with a progress
  // callback so that Ctrl-C stops the read between two chunks.
  Interruptible call;
  IoOptions io;
  io.device = where;
  io.devices = module_context().devices;
  io.concurrency = 1;
  io.mode = IoMode::Pread;
  io.prefault = false;
  io.progress = call.progress();
  call.run([&] { source.read_all({request}, io); });
}

// Every (name, dtype, ptr, nbytes) of `requests` read in one batch of the I/O engine at its own
// settings (io=auto: O_DIRECT for a cold file, threads, the destinations prefaulted meanwhile), on
// `device`: how load_file(copy=True) fills fresh memory faster than mapping and copying.
void read_many_into(const WeightSource& source, const std::vector<std::tuple<std::string, std::string, uintptr_t, uint64_t>>& requests,
                    const std::string& device) {
  std::vector<ReadRequest> reads;
  reads.reserve(requests.size());
  for (const auto& [name, dtype, ptr, nbytes] : requests) {
    const ReadRequest request = checked_request(source, source.at(name), {}, dtype_from_name(dtype), ptr, nbytes);
    if (nbytes) reads.push_back(request);
  }
  Interruptible call;
  IoOptions io;
  io.device = Device::parse(device);
  io.devices = module_context().devices;
  io.progress = call.progress();
  call.run([&] { source.read_all(reads, io); });
}

// The bytes `name` stores, as they are (a sub-byte float's packed codes, say), into [ptr, ptr + nbytes):
// the tensor read as nbytes U8 from where its catalogue entry says, through the same I/O engine.
void read_stored_into(const WeightSource& source, const std::string& name, uintptr_t ptr, uint64_t nbytes) {
  const TensorInfo& t = source.at(name);
  if (!t.parts.empty() || !t.strides.empty() || !t.row_order.empty() || (t.decoder && t.decoder->aux_block_bytes()))
    throw Error(ErrorCode::InvalidArgument, "its stored bytes are not one contiguous range", source.file_of(t), t.name);
  if (nbytes != t.nbytes)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the destination holds {} bytes; {} are stored", nbytes, t.nbytes),
                source.file_of(t), t.name);
  TensorInfo bytes = t;
  bytes.decoder = nullptr;
  bytes.dtype = DType::U8;
  bytes.shape = {t.nbytes};
  Interruptible call;
  IoOptions io;
  io.concurrency = 1;
  io.mode = IoMode::Pread;
  io.prefault = false;
  io.progress = call.progress();
  call.run([&] { source.read_all({ReadRequest{&bytes, {}, DType::U8, reinterpret_cast<void*>(ptr)}}, io); });
}

// entries: (name, dtype, shape, element strides or None, data pointer, owner).
SourcePtr from_memory(const std::string& label, const pyb::list& entries, const std::map<std::string, std::string>& metadata) {
  std::vector<MemoryTensor> tensors;
  for (const pyb::handle e : entries) {
    const auto item = e.cast<pyb::tuple>();
    MemoryTensor m;
    m.name = item[0].cast<std::string>();
    m.dtype = dtype_from_name(item[1].cast<std::string>());
    m.shape = item[2].cast<Shape>();
    if (!item[3].is_none()) m.strides = item[3].cast<std::vector<int64_t>>();
    m.data = reinterpret_cast<const void*>(item[4].cast<uintptr_t>());
    m.keep_alive = keep_alive(pyb::reinterpret_borrow<pyb::object>(item[5]));
    tensors.push_back(std::move(m));
  }
  return WeightSource::from_memory(label, std::move(tensors), metadata);
}

// A file tree of one file, `label`: the bytes (kept alive while read).
std::shared_ptr<const Opener> bytes_opener(const std::string& label, const pyb::bytes& data) {
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(data.ptr(), &buffer, &size);
  auto opener = std::make_shared<MemoryOpener>();
  opener->add(label, MemoryRegion{reinterpret_cast<const std::byte*>(buffer), static_cast<uint64_t>(size), keep_alive(data)});
  return opener;
}

// A whole checkpoint given as bytes, opened by content as a file would be.
SourcePtr from_bytes(const std::string& label, const pyb::bytes& data) {
  const std::shared_ptr<const Opener> opener = bytes_opener(label, data);
  const FileFormat& format = builtin_formats().detect_or_throw(*opener->open(label));
  return open_files(format, {label}, label, opener);
}

// A safetensors file (or its bytes) with its complex tensors (C64) catalogued as pairs of their part
// (F32: the same bytes, a last dimension of 2), and their names: the drop-in presents them as
// complex numbers. None when the content is not safetensors; the reader's error for a header that
// breaks a rule or holds a dtype the library lacks.
std::optional<std::pair<SourcePtr, std::vector<std::string>>> open_safetensors(const std::string& label,
                                                                              const std::optional<pyb::bytes>& data) {
  const std::shared_ptr<const Opener> opener = data ? bytes_opener(label, *data) : module_context().files();
  const std::shared_ptr<ByteSource> file = opener->open(label);
  FormatList safetensors;
  safetensors.add(safetensors_format());
  if (!safetensors.detect(*file)) return std::nullopt;
  SafetensorsWithComplex read = read_safetensors_catalogue_with_complex(*file);
  auto source = std::make_shared<WeightSource>("safetensors", label, std::move(read.catalogue), opener);
  return std::make_pair(std::move(source), std::move(read.complex));
}

// A safetensors file's __metadata__ as the header states it: None when it has none (or null).
std::optional<std::map<std::string, std::string>> safetensors_metadata(const std::string& path) {
  return read_stated_safetensors_header(*module_context().files()->open(path)).metadata;
}

}  // namespace

void register_private_views(pyb::module_& m);  // private_views.cpp: the zero-copy views of a Source

void register_sources(pyb::module_& m) {
  pyb::class_<WeightSource, SourcePtr>(m, "Source")
      .def_property_readonly("format", &WeightSource::format)
      .def_property_readonly("origin", &WeightSource::origin)
      .def("keys", [](const WeightSource& s) {
        std::vector<std::string> names;
        for (const TensorInfo& t : s.tensors()) names.push_back(t.name);
        return names;
      })
      .def("__len__", [](const WeightSource& s) { return s.tensors().size(); })
      .def("__contains__", [](const WeightSource& s, const std::string& n) { return s.find(n) != nullptr; })
      .def("info", [](const WeightSource& s, const std::string& n) { return tensor_info(s, s.at(n)); })
      .def("metadata", &WeightSource::metadata)
      .def("total_bytes", &WeightSource::total_bytes)
      .def("only", [](const WeightSource& s, const std::vector<std::string>& names) {
        return std::shared_ptr<WeightSource>(s.only(names));
      }, pyb::arg("names"), "the same catalogue with only these tensors (a load of it reads them alone)")
      .def("reads_slice", [](const WeightSource& s, const std::string& n, size_t dim, uint64_t begin, uint64_t end) {
        const TensorInfo& t = s.at(n);
        return naming_file(s.file_of(t), [&] { return reads_slice(t, Slice{dim, begin, end}); });
      }, pyb::arg("name"), pyb::arg("dim"), pyb::arg("begin"), pyb::arg("end"),
           "Whether rows [begin, end) of dimension dim are read as a slice (not cutting through the encoding's blocks).")
      .def("read_stored_into", &read_stored_into, pyb::arg("name"), pyb::arg("ptr"), pyb::arg("nbytes"),
           "Reads the tensor's stored bytes as they are (no decoding) into [ptr, ptr + nbytes).")
      .def("read_many_into", &read_many_into, pyb::arg("requests"), pyb::arg("device") = "cpu",
           "Reads every (name, dtype, ptr, nbytes) in one batch of the I/O engine (io=auto, its threads).")
      .def("read_into", &read_into, pyb::arg("name"), pyb::arg("dtype"), pyb::arg("ptr"), pyb::arg("nbytes"),
           pyb::arg("slice") = pyb::none(), pyb::arg("device") = "cpu");
  register_private_views(m);
  m.def("from_memory", &from_memory, pyb::arg("label"), pyb::arg("entries"), pyb::arg("metadata") = std::map<std::string, std::string>{});
  m.def("from_bytes", &from_bytes, pyb::arg("label"), pyb::arg("data"));
  m.def("open_safetensors", &open_safetensors, pyb::arg("label"), pyb::arg("data") = pyb::none(),
        "(source, names of its complex tensors, catalogued as F32 pairs) of a safetensors file or bytes; None for other content");
  m.def("safetensors_metadata", &safetensors_metadata, pyb::arg("path"));
  m.def("recorded_tensor_digests", &recorded_tensor_digests, pyb::arg("source"),
        "{tensor: sha256} as the writer recorded them in the files' __metadata__ (save_file(tensor_digests=True))");
  m.def("dtype_size", [](const std::string& dtype) { return dtype_size(dtype_from_name(dtype)); }, pyb::arg("dtype"),
        "bytes per element of a dtype (\"F32\": 4)");
  m.def("dtype_name", [](const std::string& spelling) -> std::optional<std::string> {
    if (const std::optional<DType> d = parse_dtype_alias(spelling)) return std::string(wl::dtype_name(*d));
    return std::nullopt;
  }, pyb::arg("spelling"), "the library's name of a dtype spelling (\"bfloat16\", \"bf16\", \"BF16\": \"BF16\"); None if unknown");
}

}  // namespace wl::py
