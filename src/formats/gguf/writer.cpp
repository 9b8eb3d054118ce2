// Writing GGUF v3 files: the header first, then each tensor's bytes, converted or quantised, as
// they arrive.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include <fmt/format.h>

#include "core/atomic_output.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF fields are written straight from memory");

constexpr uint64_t kBatchElems = 1 << 20;  // elements converted per write

// The header's bytes, built in memory (it is small next to the tensors).
class Bytes {
 public:
  template <typename T>
  void put(T value) {
    const auto* p = reinterpret_cast<const char*>(&value);
    data_.append(p, sizeof value);
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    data_.append(s);
  }
  template <typename T>
  void put_all(const std::vector<T>& v) {
    data_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void pad_to(uint64_t alignment) { data_.append((alignment - data_.size() % alignment) % alignment, '\0'); }
  const std::string& data() const noexcept { return data_; }

 private:
  std::string data_;
};

void put_array(Bytes& out, const GgufArray& a);

// A value without its type tag.
void put_payload(Bytes& out, const GgufValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) out.put_string(v);
        else if constexpr (std::is_same_v<T, GgufArray>) put_array(out, v);
        else if constexpr (std::is_same_v<T, bool>) out.put<uint8_t>(v ? 1 : 0);
        else out.put(v);
      },
      value);
}

void put_array(Bytes& out, const GgufArray& a) {
  out.put<uint32_t>(static_cast<uint32_t>(a.type()));
  out.put<uint64_t>(a.size());
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) {
          for (const std::string& s : v) out.put_string(s);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          for (const GgufArray& inner : v) put_array(out, inner);
        } else if constexpr (std::is_same_v<T, bool>) {
          for (bool b : v) out.put<uint8_t>(b ? 1 : 0);
        } else {
          out.put_all(v);
        }
      },
      a.elements);
}

uint64_t alignment_of(const GgufMetadata& metadata, const std::string& path) {
  const auto it = metadata.find("general.alignment");
  if (it == metadata.end()) return kGgufDefaultAlignment;
  const auto* a = std::get_if<uint32_t>(&it->second);
  if (!a || *a == 0 || !std::has_single_bit(*a) || *a > kGgufMaxAlignment)
    throw Error(ErrorCode::GgufBadAlignment,
                fmt::format("general.alignment is {} ({}); it must be a UINT32 power of two up to {}",
                            gguf_value_to_string(it->second), gguf_type_name(gguf_value_type(it->second)),
                            kGgufMaxAlignment),
                path);
  return *a;
}

// An entry's rows: its first dim (a scalar is one row). Parts and row orders count in them.
uint64_t rows_of(const GgufWriteEntry& e) { return e.shape.empty() ? 1 : e.shape[0]; }

// Where and how one entry is stored.
struct Planned {
  uint64_t offset = 0;  // in the data section
  uint64_t nbytes = 0;
};

}  // namespace

struct GgufStreamWriter::State {
  std::string path;
  std::vector<GgufWriteEntry> entries;
  std::vector<Planned> plan;
  uint64_t alignment = kGgufDefaultAlignment;
  AtomicFileWriter out;
  uint64_t data_written = 0;  // bytes of the data section written so far
  size_t next = 0;
  uint64_t rows_done = 0;     // of entry `next`, written in parts
  bool finished = false;

  explicit State(std::string p) : path(std::move(p)), out(path) {}

  void write_padded_to(uint64_t data_offset) {
    static const std::vector<char> zeros(kGgufMaxAlignment, '\0');
    out.write(zeros.data(), data_offset - data_written);
    data_written = data_offset;
  }
  void encode(const std::byte* in, DType from, uint64_t elems, const GgufWriteEntry& entry);
  uint64_t rows_in(const Shape& part, const GgufWriteEntry& entry) const;

  // The entry the next write fills; InvalidArgument naming `call` after finish() or past the last.
  const GgufWriteEntry& current(const char* call) const {
    if (finished) throw Error(ErrorCode::InvalidArgument, fmt::format("{}() after finish()", call), path);
    if (next >= entries.size())
      throw Error(ErrorCode::InvalidArgument, fmt::format("{}() after every declared tensor was written", call), path);
    return entries[next];
  }
  // `rows` more rows of the current entry are written; after its last, the padding up to the next.
  void advance(uint64_t rows) {
    rows_done += rows;
    if (rows_done < rows_of(entries[next])) return;
    write_padded_to((plan[next].offset + plan[next].nbytes + alignment - 1) / alignment * alignment);
    rows_done = 0;
    ++next;
  }
};

namespace {

// A row order must name a row of the tensor for each of its rows, and a block type's rows must be
// whole blocks to be moved one by one.
void check_row_order(const GgufWriteEntry& e, uint64_t block_elems, const std::string& path) {
  if (e.row_order.empty()) return;
  const uint64_t rows = rows_of(e);
  if (e.row_order.size() != rows ||
      std::any_of(e.row_order.begin(), e.row_order.end(), [&](uint64_t r) { return r >= rows; }))
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("the row order has {} entries for {} rows, or names a row past the last", e.row_order.size(),
                            rows),
                path, e.name);
  if (rows > 0 && shape_numel(e.shape) / rows % block_elems != 0)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} rows must be whole blocks to be stored in another order", ggml_type_name(e.type)), path,
                e.name);
}

bool writable(GgmlType type) {
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) return true;
  const auto quantized = gguf_quantized_types();
  return std::any_of(quantized.begin(), quantized.end(), [&](const GgufQuantizedType& q) { return q.type == type; });
}

std::string writable_names() {
  std::string names = "F32, F16, BF16";
  for (const GgufQuantizedType& q : gguf_quantized_types()) names += ", " + ggml_type_name(q.type);
  return names;
}

// Checks the entries and lays them out.
std::vector<Planned> plan_entries(const std::vector<GgufWriteEntry>& entries, uint64_t alignment,
                                  const std::string& path) {
  std::vector<Planned> plan;
  std::unordered_set<std::string> names;
  uint64_t offset = 0;
  for (const GgufWriteEntry& e : entries) {
    Planned p;
    if (!writable(e.type))
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("cannot write {} tensors (only {})", ggml_type_name(e.type), writable_names()), path,
                  e.name);
    if (e.name.size() > kGgufMaxNameBytes)
      throw Error(ErrorCode::GgufNameTooLong,
                  fmt::format("name '{}' is {} bytes long; ggml allows at most {}", e.name, e.name.size(),
                              kGgufMaxNameBytes),
                  path, e.name);
    if (!names.insert(e.name).second)
      throw Error(ErrorCode::DuplicateTensorName, fmt::format("stored name '{}' given twice", e.name), path, e.name);
    if (e.shape.size() > kGgufMaxDims)
      throw Error(ErrorCode::GgufTooManyDims,
                  fmt::format("shape {} has more than {} dimensions", shape_to_string(e.shape), kGgufMaxDims), path,
                  e.name);
    const gguf::GgmlTypeTraits& traits = *gguf::ggml_type_traits(static_cast<uint32_t>(e.type));
    const uint64_t row = e.shape.empty() ? 1 : e.shape.back();
    if (row % traits.block_elems != 0)
      throw Error(ErrorCode::GgufRowNotBlockMultiple,
                  fmt::format("the last dimension, {}, is not a multiple of {}'s block of {}", row, traits.name,
                              traits.block_elems),
                  path, e.name);
    check_row_order(e, traits.block_elems, path);
    const uint64_t numel = shape_numel(e.shape);
    uint64_t padded_end = 0;
    if (__builtin_mul_overflow(numel / traits.block_elems, traits.block_bytes, &p.nbytes) ||
        __builtin_add_overflow(offset, p.nbytes, &padded_end) ||
        __builtin_add_overflow(padded_end, alignment - 1, &padded_end))
      throw Error(ErrorCode::ValidationOverflow, "the data section would be more than 2^64 bytes", path, e.name);
    p.offset = offset;
    offset = padded_end / alignment * alignment;
    plan.push_back(std::move(p));
  }
  return plan;
}

std::string build_header(const std::vector<GgufWriteEntry>& entries, const std::vector<Planned>& plan,
                         const GgufMetadata& metadata, uint64_t alignment, const std::string& path) {
  Bytes out;
  out.put<uint32_t>(0x46554747);  // "GGUF" read as a little-endian u32
  out.put<uint32_t>(3);
  out.put<uint64_t>(entries.size());
  out.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata) {
    if (key.empty()) throw Error(ErrorCode::GgufEmptyKey, "a metadata key is empty", path);
    out.put_string(key);
    out.put<uint32_t>(static_cast<uint32_t>(gguf_value_type(value)));
    put_payload(out, value);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    out.put_string(entries[i].name);
    out.put<uint32_t>(static_cast<uint32_t>(entries[i].shape.size()));
    for (auto d = entries[i].shape.rbegin(); d != entries[i].shape.rend(); ++d) out.put<uint64_t>(*d);
    out.put<uint32_t>(static_cast<uint32_t>(entries[i].type));
    out.put<uint64_t>(plan[i].offset);
  }
  out.pad_to(alignment);
  return out.data();
}

}  // namespace

void GgufStreamWriter::State::encode(const std::byte* in, DType from, uint64_t elems, const GgufWriteEntry& entry) {
  if (const auto raw = gguf::ggml_raw_dtype(entry.type)) {
    std::vector<std::byte> bytes(elems * dtype_size(*raw));
    convert(from, in, *raw, bytes.data(), elems);
    out.write(bytes.data(), bytes.size());
    data_written += bytes.size();
    return;
  }
  std::vector<float> converted;
  const float* values = reinterpret_cast<const float*>(in);
  if (from != DType::F32 || reinterpret_cast<uintptr_t>(in) % alignof(float) != 0) {
    converted.resize(elems);
    convert(from, in, DType::F32, converted.data(), elems);
    values = converted.data();
  }
  bool all_finite = true;
  for (uint64_t i = 0; i < elems; ++i) all_finite &= values[i] - values[i] == 0.0f;
  if (!all_finite) {
    const float* bad = std::find_if(values, values + elems, [](float v) { return !std::isfinite(v); });
    throw Error(ErrorCode::InvalidArgument, fmt::format("cannot quantise {} to {}", *bad, ggml_type_name(entry.type)),
                path, entry.name);
  }
  const gguf::GgmlTypeTraits& traits = *gguf::ggml_type_traits(static_cast<uint32_t>(entry.type));
  std::vector<std::byte> blocks(elems / traits.block_elems * traits.block_bytes);
  gguf::ggml_quantize(entry.type, values, elems, blocks.data());
  out.write(blocks.data(), blocks.size());
  data_written += blocks.size();
}

GgufStreamWriter::GgufStreamWriter(std::string path, std::vector<GgufWriteEntry> entries,
                                   const GgufMetadata& metadata) {
  const uint64_t alignment = alignment_of(metadata, path);
  std::vector<Planned> plan = plan_entries(entries, alignment, path);
  const std::string header = build_header(entries, plan, metadata, alignment, path);
  state_ = std::make_unique<State>(std::move(path));
  state_->entries = std::move(entries);
  state_->plan = std::move(plan);
  state_->alignment = alignment;
  state_->out.write(header.data(), header.size());
}

GgufStreamWriter::~GgufStreamWriter() = default;

// Rows (slices along dim 0) of the current entry that `part` holds: all of them for the entry's
// shape, one for its shape without dim 0, or part.shape[0] for its shape with a smaller dim 0.
uint64_t GgufStreamWriter::State::rows_in(const Shape& part, const GgufWriteEntry& entry) const {
  const uint64_t rows = rows_of(entry);
  const Shape inner = entry.shape.empty() ? Shape{} : Shape(entry.shape.begin() + 1, entry.shape.end());
  uint64_t n = 0;
  if (part == entry.shape && rows_done == 0) n = rows;
  else if (!entry.shape.empty() && part == inner) n = 1;
  else if (!part.empty() && part.size() == entry.shape.size() && Shape(part.begin() + 1, part.end()) == inner) n = part[0];
  else
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("tensor has shape {} but was declared {}", shape_to_string(part), shape_to_string(entry.shape)),
                path, entry.name);
  if (rows_done + n > rows)
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("a part of {} rows after {} of the declared {}", n, rows_done, rows), path, entry.name);
  if (!entry.row_order.empty() && n != rows)
    throw Error(ErrorCode::InvalidArgument, "a tensor stored in another row order is written whole", path, entry.name);
  return n;
}

void GgufStreamWriter::write_tensor(const TensorView& tensor) {
  State& s = *state_;
  if (!s.finished && s.next < s.entries.size() && tensor.shape() != s.entries[s.next].shape)
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("tensor has shape {} but was declared {}", shape_to_string(tensor.shape()),
                            shape_to_string(s.entries[s.next].shape)),
                s.path, s.entries[s.next].name);
  write_part(tensor);
}

void GgufStreamWriter::write_part(const TensorView& part) {
  State& s = *state_;
  const GgufWriteEntry& entry = s.current("write_tensor");
  if (!part.defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", s.path, entry.name);
  const uint64_t rows = s.rows_in(part.shape(), entry);
  const TensorView src = part.is_contiguous() ? part : part.to(part.dtype());
  const uint64_t numel = src.numel();
  if (numel > 0) {
    const size_t esize = dtype_size(src.dtype());
    const uint64_t row_elems = numel / rows;
    // Batches of whole rows that are also whole blocks (the last batch is, as numel is).
    const uint64_t unit = gguf::ggml_type_traits(static_cast<uint32_t>(entry.type))->block_elems;
    const uint64_t unit_rows = unit / std::gcd(unit, row_elems);
    const uint64_t batch_rows = (std::max<uint64_t>(1, kBatchElems / row_elems) + unit_rows - 1) / unit_rows * unit_rows;
    std::vector<std::byte> gathered;
    for (uint64_t r0 = 0; r0 < rows; r0 += batch_rows) {
      const uint64_t n = std::min(batch_rows, rows - r0);
      const std::byte* in = src.raw() + r0 * row_elems * esize;
      if (!entry.row_order.empty()) {
        gathered.resize(n * row_elems * esize);
        for (uint64_t r = 0; r < n; ++r)
          std::memcpy(gathered.data() + r * row_elems * esize, src.raw() + entry.row_order[r0 + r] * row_elems * esize,
                      row_elems * esize);
        in = gathered.data();
      }
      s.encode(in, src.dtype(), n * row_elems, entry);
    }
  }
  s.advance(rows);
}

void GgufStreamWriter::write_stored(std::span<const std::byte> bytes) {
  State& s = *state_;
  const GgufWriteEntry& entry = s.current("write_stored");
  const Planned& plan = s.plan[s.next];
  const uint64_t rows = rows_of(entry);
  const uint64_t slice = rows == 0 ? 0 : plan.nbytes / rows;
  if (!entry.row_order.empty() || slice == 0 || bytes.size() % slice != 0 || s.rows_done + bytes.size() / slice > rows)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} stored bytes are not whole slices of {} bytes among the {} of {} rows left{}", bytes.size(), slice,
                            rows - s.rows_done, rows, entry.row_order.empty() ? "" : " (a row order is written through write_part)"),
                s.path, entry.name);
  s.out.write(bytes.data(), bytes.size());
  s.data_written += bytes.size();
  s.advance(bytes.size() / slice);
}

void GgufStreamWriter::finish() {
  State& s = *state_;
  if (s.finished) throw Error(ErrorCode::InvalidArgument, "finish() called twice", s.path);
  if (s.next != s.entries.size())
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("only {} of the {} declared tensors were written{}", s.next, s.entries.size(),
                            s.rows_done ? fmt::format(" ({} rows of the next)", s.rows_done) : ""),
                s.path, s.entries[s.next].name);
  s.out.commit();
  s.finished = true;
}

void write_gguf(const std::string& path, const std::vector<GgufWriteTensor>& tensors, const GgufMetadata& metadata) {
  std::vector<GgufWriteEntry> entries;
  entries.reserve(tensors.size());
  for (const GgufWriteTensor& t : tensors) {
    if (!t.tensor.defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", path, t.name);
    entries.push_back({t.name, t.tensor.shape(), t.type, t.row_order});
  }
  GgufStreamWriter writer(path, std::move(entries), metadata);
  for (const GgufWriteTensor& t : tensors) writer.write_tensor(t.tensor);
  writer.finish();
}

}  // namespace wl
