#include "weightloader/source.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/device_destination.hpp"
#include "core/device_registry.hpp"
#include "core/io_engine.hpp"
#include "core/named_errors.hpp"
#include "core/side_reads.hpp"
#include "core/tensor_parts.hpp"
#include "weightloader/error.hpp"

namespace wl {

std::string TensorInfo::stored_type() const { return decoder ? decoder->name() : std::string(dtype_name(dtype)); }

namespace {

Error not_listed(const TensorInfo& t, size_t files, const std::string& origin = {}) {
  return Error(ErrorCode::InvalidArgument, fmt::format("file index {} is not one of the {} files of its catalogue", t.source, files),
               origin, t.name);
}

// Calls `f` on `t`, its pieces and its decoder's side tensors: every tensor that names a file.
template <class F>
void each_file_user(const TensorInfo& t, const F& f) {
  f(t);
  for (const TensorInfo& p : t.parts) each_file_user(p, f);
  if (t.decoder)
    for (const SideRead& s : t.decoder->side_reads()) each_file_user(s.tensor, f);
}

}  // namespace

SourceIndex Catalogue::add_file(const std::string& name) {
  const auto it = std::find(files.begin(), files.end(), name);
  if (it != files.end()) return static_cast<SourceIndex>(it - files.begin());
  if (files.size() >= UINT32_MAX) throw Error(ErrorCode::InvalidArgument, "a catalogue of more than 2^32 - 1 files", name);
  files.push_back(name);
  return static_cast<SourceIndex>(files.size() - 1);
}

const std::string& Catalogue::file_of(const TensorInfo& t) const {
  if (t.source >= files.size()) throw not_listed(t, files.size());
  return files[t.source];
}

TensorInfo Catalogue::adopt(TensorInfo t, const std::vector<std::string>& from) {
  if (t.decoder)  // a decoder's side tensors keep the indices they were made with: they must not move
    for (const SideRead& s : t.decoder->side_reads())
      if (s.tensor.source >= from.size() || s.tensor.source >= files.size() || files[s.tensor.source] != from[s.tensor.source])
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("its decoder reads side tensor '{}' by its file index, which this catalogue would change",
                                s.tensor.name),
                    s.tensor.source < from.size() ? from[s.tensor.source] : std::string(), t.name);
  auto move = [&](TensorInfo& x) {
    if (x.source >= from.size()) throw not_listed(x, from.size());
    x.source = add_file(from[x.source]);
  };
  move(t);
  for (TensorInfo& p : t.parts) move(p);
  return t;
}

void Catalogue::append(const Catalogue& other) {
  tensors.reserve(tensors.size() + other.tensors.size());
  for (const TensorInfo& t : other.tensors) tensors.push_back(adopt(t, other.files));
}

Shape slice_shape_of(const TensorInfo& tensor, const Slice& slice) {
  Shape shape = tensor.shape;
  if (shape.empty()) {
    if (slice.dim != 0 || slice.begin != 0 || (slice.end != UINT64_MAX && slice.end != 1))
      throw Error(ErrorCode::SliceOutOfBounds, "a scalar tensor cannot be sliced", {}, tensor.name);
    return shape;
  }
  if (slice.dim >= shape.size())
    throw Error(ErrorCode::SliceOutOfBounds, fmt::format("slice along dim {} of a tensor of rank {}", slice.dim, shape.size()), {},
                tensor.name);
  const uint64_t end = std::min(slice.end, shape[slice.dim]);
  if (slice.begin > end)
    throw Error(ErrorCode::SliceOutOfBounds,
                fmt::format("slice [{}, {}) of dim {} of shape {}", slice.begin, slice.end, slice.dim, shape_to_string(shape)), {},
                tensor.name);
  shape[slice.dim] = end - slice.begin;
  return shape;
}

Error in_file(const Error& e, const std::string& file) {
  if (!e.file().empty()) return e;
  Error named(e.code(), e.message(), file, e.tensor());
  named.set_retryable(e.retryable());
  return named;
}

WeightSource::WeightSource(std::string format, std::string origin, Catalogue catalogue, std::shared_ptr<const Opener> opener)
    : format_(std::move(format)), origin_(std::move(origin)), catalogue_(std::move(catalogue)),
      opener_(opener ? std::move(opener) : local_opener()),
      sources_(std::dynamic_pointer_cast<const CachingOpener>(opener_)) {
  if (!sources_) sources_ = std::make_shared<CachingOpener>(opener_);
  const std::vector<TensorInfo>& tensors = catalogue_.tensors;
  by_name_.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    each_file_user(t, [&](const TensorInfo& x) {
      if (x.source >= catalogue_.files.size()) throw not_listed(x, catalogue_.files.size(), origin_);
    });
    if (!t.row_order.empty() &&
        (t.shape.empty() || t.row_order.size() != t.shape[0] ||
         std::any_of(t.row_order.begin(), t.row_order.end(), [&](uint64_t r) { return r >= t.shape[0]; })))
      throw Error(ErrorCode::InvalidArgument, "row order is not a permutation of the tensor's rows", file_of(t), t.name);
    check_parts(t, catalogue_.files);
    auto [it, inserted] = by_name_.emplace(t.name, i);
    if (!inserted) {
      const std::string& first = file_of(tensors[it->second]);
      const std::string& again = file_of(t);
      throw Error(first == again ? ErrorCode::DuplicateTensorName : ErrorCode::TensorInTwoFiles,
                  first == again ? fmt::format("appears twice in {}", first) : fmt::format("appears in both {} and {}", first, again),
                  origin_, t.name);
    }
  }
}

WeightSource::~WeightSource() = default;

const std::shared_ptr<const Opener>& WeightSource::opener() const noexcept { return opener_; }

std::unique_ptr<WeightSource> WeightSource::with_metadata(std::map<std::string, std::string> metadata) const {
  return std::make_unique<WeightSource>(format_, origin_, Catalogue{files(), tensors(), std::move(metadata)}, opener());
}

std::unique_ptr<WeightSource> WeightSource::only(const std::vector<std::string>& names) const {
  Catalogue kept{files(), {}, metadata()};  // every file: a decoder's side tensors keep their indices
  kept.tensors.reserve(names.size());
  for (const std::string& name : names) kept.tensors.push_back(at(name));
  return std::make_unique<WeightSource>(format_, origin_, std::move(kept), opener());
}

std::unique_ptr<WeightSource> WeightSource::from_memory(std::string label, std::vector<MemoryTensor> tensors,
                                                        std::map<std::string, std::string> metadata) {
  auto opener = std::make_shared<MemoryOpener>();
  Catalogue catalogue{{}, {}, std::move(metadata)};
  catalogue.tensors.reserve(tensors.size());
  for (MemoryTensor& m : tensors) {
    TensorInfo t;
    t.name = m.name;
    t.dtype = m.dtype;
    t.shape = m.shape;
    // Each tensor its own region, named for messages (names are unique, so no lookup: a name given
    // twice is refused below as appearing twice in one file).
    catalogue.files.push_back(label + "/" + m.name);
    t.source = static_cast<SourceIndex>(catalogue.files.size() - 1);
    const uint64_t n = shape_numel(m.shape);
    uint64_t span = n;  // elements from the first to the last one, inclusive
    if (!m.strides.empty()) {
      if (m.strides.size() != m.shape.size())
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("{} strides for a shape of rank {}", m.strides.size(), m.shape.size()), label, m.name);
      span = n ? 1 : 0;
      for (size_t d = 0; d < m.shape.size() && n; ++d) {
        if (m.strides[d] < 0)
          throw Error(ErrorCode::InvalidArgument, "negative strides are not supported", label, m.name);
        span += (m.shape[d] - 1) * static_cast<uint64_t>(m.strides[d]);
      }
      // Contiguous strides are dropped, so that the engine reads the tensor as one run.
      std::vector<int64_t> row_major(m.shape.size());
      int64_t step = 1;
      for (size_t d = m.shape.size(); d-- > 0;) row_major[d] = step, step *= static_cast<int64_t>(m.shape[d]);
      if (m.strides != row_major && n > 1) t.strides = m.strides;
    }
    t.nbytes = span * dtype_size(m.dtype);
    opener->add(catalogue.files[t.source], MemoryRegion{static_cast<const std::byte*>(m.data), t.nbytes, std::move(m.keep_alive)});
    catalogue.tensors.push_back(std::move(t));
  }
  return std::make_unique<WeightSource>("memory", std::move(label), std::move(catalogue), std::move(opener));
}

const TensorInfo* WeightSource::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors()[it->second];
}

const TensorInfo& WeightSource::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(ErrorCode::TensorNotFound, fmt::format("no such tensor among the {} in this checkpoint", tensors().size()),
              origin_, std::string(name));
}

uint64_t WeightSource::bytes_fetched() const { return sources_->bytes_fetched(); }
std::shared_ptr<ByteSource> WeightSource::file(SourceIndex index) const {
  if (index >= files().size())
    throw Error(ErrorCode::InvalidArgument, fmt::format("file index {} is not one of its {} files", index, files().size()), origin_);
  return sources_->open(files()[index]);
}

uint64_t WeightSource::total_bytes() const {
  uint64_t sum = 0;
  for (const TensorInfo& t : tensors()) sum += t.nbytes;
  return sum;
}

Shape WeightSource::slice_shape(const TensorInfo& tensor, const Slice& slice) const {
  return naming_file(file_of(tensor), [&] { return slice_shape_of(tensor, slice); });
}

uint64_t WeightSource::read(const TensorInfo& tensor, DType dst_dtype, void* dst, Slice slice) const {
  IoOptions io;
  io.concurrency = 1;
  io.mode = IoMode::Pread;
  io.prefault = false;  // one small read: not worth a second pass
  return read_all({ReadRequest{&tensor, slice, dst_dtype, dst}}, io).bytes_read;
}

namespace {

// Side tensors ride in the data's plan, unless the values go to a device (the engine delivers one
// destination's values) or every byte is hashed in file order (verify=sha256): then they are read
// first, in a plan of their own, into host memory.
bool sides_with_data(const SideReads& sides, const IoOptions& io) {
  return io.device.is_cpu() && !io.verify_sha256 && sides.plannable();
}

// Options for side tensors read apart: host memory, nothing hashed, no progress reported.
IoOptions side_options(const IoOptions& given) {
  IoOptions io = given;
  io.device = Device{};
  io.verify_sha256 = false;
  io.progress = nullptr;
  io.host_budget = 0;
  return io;
}

}  // namespace

ReadStats WeightSource::read_all(const std::vector<ReadRequest>& requests, const IoOptions& given) const {
  const SourceFiles files{catalogue_.files, *sources_};
  std::deque<TensorInfo> pieces;  // of assembled tensors, for as long as the reads run
  const std::vector<ReadRequest> data = expand_parts(requests, files.names, pieces);
  prepare_plain_decoders(data);
  const SideReads sides(data, files.names);
  const bool together = !sides.empty() && sides_with_data(sides, given);
  uint64_t side_bytes = 0;
  if (!sides.empty() && !together) {
    side_bytes = run_reads(sides.requests(), files, side_options(given)).bytes_read;
    sides.prepare_all();
  }
  SideTensorReads side{sides, {}};
  const std::vector<ReadRequest> expanded = together ? sides.with(data, side.is_side) : data;
  IoOptions io = given;
  if (given.host_budget) {  // staging and threads lowered to fit, before anything is read
    FittedReads fitted = wl::estimate_reads(expanded, files, given, !given.device.is_cpu(), true);
    if (fitted.estimate.host_bytes > given.host_budget)
      throw Error(ErrorCode::OverBudget,
                  fmt::format("the reads need {} bytes of host memory at least (one thread, {} bytes of staging), over "
                              "their budget of {}",
                              fitted.estimate.min_host_bytes, fitted.estimate.staging_bytes, given.host_budget),
                  origin_);
    io = std::move(fitted.options);
  }
  if (io.device.is_cpu()) {
    ReadStats stats = run_reads(expanded, files, io, host_memory(), together ? &side : nullptr);
    stats.bytes_read += side_bytes;
    return stats;
  }
  const std::shared_ptr<CopyEngine> engine = copy_engine(io.device, io.devices.get());
  // Pinned memory is slow to allocate: no more than the values need (one small tensor: one small buffer).
  uint64_t bytes = 0;
  for (const ReadRequest& r : expanded) bytes += shape_numel(slice_shape(*r.tensor, r.slice)) * dtype_size(r.dst_dtype);
  const DeviceDestination ring(*engine, std::clamp<uint64_t>(bytes, 1, std::max<uint64_t>(io.staging_bytes, 1)));
  ReadStats stats = run_reads(expanded, files, io, ring);
  stats.bytes_read += side_bytes;
  return stats;
}

ReadEstimate WeightSource::estimate_reads(const std::vector<ReadRequest>& requests, const IoOptions& io) const {
  const SourceFiles files{catalogue_.files, *sources_};
  std::deque<TensorInfo> pieces;
  const std::vector<ReadRequest> data = expand_parts(requests, files.names, pieces);
  const SideReads sides(data, files.names);
  if (sides_with_data(sides, io)) {  // with none, that is the data alone
    std::vector<char> is_side;
    return wl::estimate_reads(sides.with(data, is_side), files, io, !io.device.is_cpu(), false).estimate;
  }
  ReadEstimate estimate = wl::estimate_reads(data, files, io, !io.device.is_cpu(), false).estimate;
  for (const ReadRequest& r : sides.requests()) {  // read apart, first, whole
    estimate.file_bytes[file_of(*r.tensor)] += r.tensor->nbytes;
    estimate.bytes_read += r.tensor->nbytes;
  }
  return estimate;
}

TensorView WeightSource::load(const TensorInfo& tensor, std::optional<DType> dtype) const {
  TensorView out = TensorView::empty(dtype.value_or(tensor.dtype), tensor.shape);
  read(tensor, out.dtype(), out.raw());
  return out;
}

std::optional<TensorView> WeightSource::view(const TensorInfo& tensor) const {
  if (tensor.decoder || !tensor.strides.empty() || !tensor.row_order.empty() || !tensor.parts.empty()) return std::nullopt;
  std::shared_ptr<ByteSource> source = sources_->open(file_of(tensor));
  if (!source->mapping() && tensor.nbytes > 0) return std::nullopt;  // a remote source: read it instead
  try {
    return TensorView(map_source_region(std::move(source), tensor.offset, tensor.nbytes), tensor.dtype, tensor.shape, 0);
  } catch (const Error& e) {
    throw Error(e.code(), e.message(), e.file(), tensor.name);  // the same failure, naming the tensor
  }
}

}  // namespace wl
