// Reading a GGUF file's header, metadata and tensor infos, with every rule checked before the
// bytes it governs are trusted.
#include <algorithm>
#include <bit>
#include <concepts>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weightloader/byte_source.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF fields are read straight into memory");

// What is being read, for messages: a string, or a callable that formats one only when an error
// needs it (a vocabulary of 100k strings should not format 100k descriptions).
std::string describe(std::string_view what) { return std::string(what); }
template <std::invocable F>
std::string describe(const F& what) {
  return what();
}

// Sequential reads through a buffer, so a vocabulary of 100k strings is not 200k system calls.
class Cursor {
 public:
  explicit Cursor(const ByteSource& file) : file_(file) {}

  uint64_t pos() const noexcept { return pos_; }
  uint64_t remaining() const noexcept { return file_.size() - pos_; }

  // Reads `n` bytes; Truncated (naming `what`) if the file ends first.
  template <typename What>
  void read(void* dst, uint64_t n, const What& what) {
    if (n > remaining())
      throw Error(ErrorCode::Truncated,
                  fmt::format("{} needs {} bytes at offset {}, but the file ends at {}", describe(what), n, pos_,
                              file_.size()),
                  file_.name());
    auto* out = static_cast<std::byte*>(dst);
    while (n > 0) {
      if (pos_ < buf_start_ || pos_ >= buf_start_ + buf_.size()) refill();
      const uint64_t at = pos_ - buf_start_;
      const uint64_t take = std::min<uint64_t>(n, buf_.size() - at);
      std::memcpy(out, buf_.data() + at, take);
      out += take;
      pos_ += take;
      n -= take;
    }
  }

  template <typename T, typename What>
  T get(const What& what) {
    T value;
    read(&value, sizeof value, what);
    return value;
  }

 private:
  // Reads grow from 64 KiB to 1 MiB: a small header costs one small read (over a network, bytes
  // past the header are fetched for nothing), a big one (a tokenizer's vocabulary) few round trips.
  void refill() {
    buf_.resize(std::min<uint64_t>(next_bytes_, remaining()));
    file_.read_exact(pos_, buf_.data(), buf_.size());
    buf_start_ = pos_;
    next_bytes_ = std::min<uint64_t>(next_bytes_ * 2, kBufferBytes);
  }

  static constexpr uint64_t kBufferBytes = 1 << 20;
  uint64_t next_bytes_ = 64 << 10;
  const ByteSource& file_;
  uint64_t pos_ = 0;
  std::vector<std::byte> buf_;
  uint64_t buf_start_ = 0;
};

// The fewest bytes an element of `type` takes in the file (strings: their length; arrays: type + count).
uint64_t min_element_bytes(GgufType type) {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: case GgufType::String: return 8;
    case GgufType::Array: return 12;
  }
  return 1;
}

constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // key length, value type, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

class Parser {
 public:
  Parser(const ByteSource& file, GgufFile& out) : file_(file), in_(file), out_(out) {}

  void run() {
    header();
    for (uint64_t i = 0; i < n_kv_; ++i) key_value(i);
    alignment();
    tensor_infos();
    check_data_ranges();
  }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& message, const std::string& tensor = {}) const {
    throw Error(code, message, file_.name(), tensor);
  }

  // A count of items of at least `min_bytes` each must fit in what is left of the file.
  template <typename What>
  void check_count(uint64_t count, uint64_t min_bytes, const What& what) const {
    if (count <= in_.remaining() / min_bytes) return;
    const std::string each = min_bytes == 1 ? "" : fmt::format(" at {} bytes each", min_bytes);
    fail(ErrorCode::GgufCountTooLarge, fmt::format("{} is {}, more than the {} bytes left after offset {} can hold{}",
                                                   describe(what), count, in_.remaining(), in_.pos(), each));
  }

  void header() {
    char magic[4];
    in_.read(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0)
      fail(ErrorCode::GgufBadMagic,
           fmt::format("starts with bytes {:02x} {:02x} {:02x} {:02x}, not \"GGUF\"", static_cast<uint8_t>(magic[0]),
                       static_cast<uint8_t>(magic[1]), static_cast<uint8_t>(magic[2]), static_cast<uint8_t>(magic[3])));
    out_.version = in_.get<uint32_t>("the version");
    if (out_.version != 2 && out_.version != 3) {
      std::string why = "only versions 2 and 3 are supported";
      if (out_.version == 1) why = "version 1 is obsolete; convert the file with a current llama.cpp";
      else if (out_.version != 0 && (out_.version & 0xFFFF) == 0) why = "this looks like a big-endian file";
      fail(ErrorCode::GgufBadVersion, fmt::format("GGUF version {}: {}", out_.version, why));
    }
    n_tensors_ = in_.get<uint64_t>("the tensor count");
    n_kv_ = in_.get<uint64_t>("the metadata count");
    check_count(n_tensors_, kMinTensorInfoBytes, "the tensor count");
    check_count(n_kv_, kMinKvBytes, "the metadata count");
  }

  template <typename What>
  std::string string(const What& what) {
    const auto length_of = [&] { return fmt::format("the length of {}", describe(what)); };
    const uint64_t length = in_.get<uint64_t>(length_of);
    if (length > kGgufMaxStringBytes)
      fail(ErrorCode::GgufStringTooLong,
           fmt::format("{} is {} bytes long, above the limit of {}", describe(what), length, kGgufMaxStringBytes));
    check_count(length, 1, length_of);
    std::string s(length, '\0');
    in_.read(s.data(), length, what);
    return s;
  }

  template <typename What>
  GgufType value_type(const What& what) {
    const uint32_t type = in_.get<uint32_t>(what);
    if (type > static_cast<uint32_t>(GgufType::F64))
      fail(ErrorCode::GgufBadValueType, fmt::format("{} is {}, not a GGUF value type (0..12)", describe(what), type));
    return static_cast<GgufType>(type);
  }

  template <typename What>
  bool boolean(uint8_t byte, const What& what) const {
    if (byte > 1)
      fail(ErrorCode::GgufBadBool, fmt::format("{} is a BOOL of byte value {}, not 0 or 1", describe(what), byte));
    return byte == 1;
  }

  template <typename T>
  std::vector<T> plain_elements(uint64_t count, const std::string& what) {
    std::vector<T> v(count);
    in_.read(v.data(), count * sizeof(T), what);
    return v;
  }

  GgufArray array(unsigned depth, const std::string& what) {
    if (depth > kGgufMaxArrayDepth)
      fail(ErrorCode::GgufNestingTooDeep,
           fmt::format("{} nests arrays {} deep, above the limit of {}", what, depth, kGgufMaxArrayDepth));
    const GgufType type = value_type([&] { return fmt::format("the element type of {}", what); });
    const uint64_t count = in_.get<uint64_t>([&] { return fmt::format("the length of {}", what); });
    if (count > kGgufMaxArrayElements)
      fail(ErrorCode::GgufArrayTooLong,
           fmt::format("{} has {} elements, above the limit of {}", what, count, kGgufMaxArrayElements));
    check_count(count, min_element_bytes(type),
                [&] { return fmt::format("the length of {} (of {})", what, gguf_type_name(type)); });
    GgufArray a;
    switch (type) {
      case GgufType::U8: a.elements = plain_elements<uint8_t>(count, what); break;
      case GgufType::I8: a.elements = plain_elements<int8_t>(count, what); break;
      case GgufType::U16: a.elements = plain_elements<uint16_t>(count, what); break;
      case GgufType::I16: a.elements = plain_elements<int16_t>(count, what); break;
      case GgufType::U32: a.elements = plain_elements<uint32_t>(count, what); break;
      case GgufType::I32: a.elements = plain_elements<int32_t>(count, what); break;
      case GgufType::F32: a.elements = plain_elements<float>(count, what); break;
      case GgufType::U64: a.elements = plain_elements<uint64_t>(count, what); break;
      case GgufType::I64: a.elements = plain_elements<int64_t>(count, what); break;
      case GgufType::F64: a.elements = plain_elements<double>(count, what); break;
      case GgufType::Bool: {
        const std::vector<uint8_t> bytes = plain_elements<uint8_t>(count, what);
        std::vector<bool> v(count);
        for (uint64_t i = 0; i < count; ++i)
          v[i] = boolean(bytes[i], [&] { return fmt::format("element {} of {}", i, what); });
        a.elements = std::move(v);
        break;
      }
      case GgufType::String: {
        std::vector<std::string> v;
        v.reserve(count);
        for (uint64_t i = 0; i < count; ++i)
          v.push_back(string([&] { return fmt::format("element {} of {}", i, what); }));
        a.elements = std::move(v);
        break;
      }
      case GgufType::Array: {
        std::vector<GgufArray> v;
        v.reserve(count);
        for (uint64_t i = 0; i < count; ++i) v.push_back(array(depth + 1, fmt::format("element {} of {}", i, what)));
        a.elements = std::move(v);
        break;
      }
    }
    return a;
  }

  GgufValue value(GgufType type, const std::string& what) {
    switch (type) {
      case GgufType::U8: return in_.get<uint8_t>(what);
      case GgufType::I8: return in_.get<int8_t>(what);
      case GgufType::U16: return in_.get<uint16_t>(what);
      case GgufType::I16: return in_.get<int16_t>(what);
      case GgufType::U32: return in_.get<uint32_t>(what);
      case GgufType::I32: return in_.get<int32_t>(what);
      case GgufType::F32: return in_.get<float>(what);
      case GgufType::Bool: return boolean(in_.get<uint8_t>(what), what);
      case GgufType::String: return string(what);
      case GgufType::Array: return array(1, what);
      case GgufType::U64: return in_.get<uint64_t>(what);
      case GgufType::I64: return in_.get<int64_t>(what);
      case GgufType::F64: return in_.get<double>(what);
    }
    fail(ErrorCode::GgufBadValueType, fmt::format("{} has no valid type", what));
  }

  void key_value(uint64_t index) {
    std::string key = string([&] { return fmt::format("metadata key {}", index); });
    if (key.empty()) fail(ErrorCode::GgufEmptyKey, fmt::format("metadata key {} is empty", index));
    if (out_.metadata.count(key))
      fail(ErrorCode::GgufDuplicateKey, fmt::format("metadata key '{}' appears twice (again as key {})", key, index));
    const std::string what = fmt::format("the value of '{}'", key);
    const GgufType type = value_type([&] { return fmt::format("the type of '{}'", key); });
    GgufValue v = value(type, what);
    out_.metadata.emplace(std::move(key), std::move(v));
  }

  void alignment() {
    const GgufValue* v = out_.find("general.alignment");
    if (!v) return;
    const auto* a = std::get_if<uint32_t>(v);
    if (!a)
      fail(ErrorCode::GgufBadAlignment,
           fmt::format("general.alignment is a {}, not a UINT32", gguf_type_name(gguf_value_type(*v))));
    if (*a == 0 || !std::has_single_bit(*a) || *a > kGgufMaxAlignment)
      fail(ErrorCode::GgufBadAlignment,
           fmt::format("general.alignment is {}; it must be a power of two from 1 to {}", *a, kGgufMaxAlignment));
    out_.alignment = *a;
  }

  void tensor_infos() {
    check_count(n_tensors_, kMinTensorInfoBytes, "the tensor count");
    out_.tensors.reserve(n_tensors_);
    std::unordered_set<std::string> names;
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      GgufTensorRecord t;
      t.name = string([&] { return fmt::format("the name of tensor {}", i); });
      if (t.name.size() > kGgufMaxNameBytes)
        fail(ErrorCode::GgufNameTooLong,
             fmt::format("tensor {}'s name is {} bytes long; ggml allows at most {}", i, t.name.size(),
                         kGgufMaxNameBytes),
             t.name);
      if (!names.insert(t.name).second)
        fail(ErrorCode::DuplicateTensorName, fmt::format("tensor name given twice (again as tensor {})", i), t.name);
      tensor_shape(t);
      tensor_type(t);
      t.offset = in_.get<uint64_t>([&] { return fmt::format("the offset of tensor '{}'", t.name); });
      if (t.offset % out_.alignment != 0)
        fail(ErrorCode::GgufMisalignedOffset,
             fmt::format("offset {} is not a multiple of the alignment {}", t.offset, out_.alignment), t.name);
      out_.tensors.push_back(std::move(t));
    }
    // The data section starts at the next multiple of the alignment (no overflow: pos <= file size).
    out_.data_offset = (in_.pos() + out_.alignment - 1) / out_.alignment * out_.alignment;
  }

  void tensor_shape(GgufTensorRecord& t) {
    const uint32_t n_dims = in_.get<uint32_t>([&] { return fmt::format("n_dims of tensor '{}'", t.name); });
    if (n_dims > kGgufMaxDims)
      fail(ErrorCode::GgufTooManyDims, fmt::format("n_dims is {}; ggml allows at most {}", n_dims, kGgufMaxDims),
           t.name);
    t.dims = std::vector<uint64_t>(n_dims);
    in_.read(t.dims.data(), n_dims * sizeof(uint64_t),
             [&] { return fmt::format("the dimensions of tensor '{}'", t.name); });
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (t.dims[d] > static_cast<uint64_t>(INT64_MAX))
        fail(ErrorCode::GgufBadDim, fmt::format("ne[{}] is {}, negative as ggml's int64", d, t.dims[d]), t.name);
      if (__builtin_mul_overflow(numel, static_cast<int64_t>(t.dims[d]), &numel))
        fail(ErrorCode::ValidationOverflow,
             fmt::format("the element count of dimensions [{}] overflows int64", fmt::join(t.dims, ", ")), t.name);
    }
  }

  void tensor_type(GgufTensorRecord& t) {
    const uint32_t id = in_.get<uint32_t>([&] { return fmt::format("the type of tensor '{}'", t.name); });
    const gguf::GgmlTypeTraits* traits = gguf::ggml_type_traits(id);
    if (!traits) fail(ErrorCode::GgufBadTensorType, fmt::format("type {} is not a ggml tensor type", id), t.name);
    t.type = traits->type;
    const uint64_t row = t.dims.empty() ? 1 : t.dims[0];
    if (row % traits->block_elems != 0)
      fail(ErrorCode::GgufRowNotBlockMultiple,
           fmt::format("rows of {} elements (ne[0]) are not a multiple of {}'s block of {}", row, traits->name,
                       traits->block_elems),
           t.name);
    const uint64_t numel = std::accumulate(t.dims.begin(), t.dims.end(), uint64_t{1}, std::multiplies<>());
    if (__builtin_mul_overflow(numel / traits->block_elems, traits->block_bytes, &t.nbytes))
      fail(ErrorCode::ValidationOverflow,
           fmt::format("{} elements of {} overflow a 64-bit byte count", numel, traits->name), t.name);
  }

  // Every tensor's bytes lie inside the file, and no two tensors share a byte.
  void check_data_ranges() const {
    std::vector<const GgufTensorRecord*> by_offset;
    for (const GgufTensorRecord& t : out_.tensors) {
      uint64_t end = 0;
      if (__builtin_add_overflow(out_.data_offset, t.offset, &end) || __builtin_add_overflow(end, t.nbytes, &end))
        fail(ErrorCode::ValidationOverflow,
             fmt::format("data section {} + offset {} + {} bytes overflows 64 bits", out_.data_offset, t.offset,
                         t.nbytes),
             t.name);
      if (end > file_.size())
        fail(ErrorCode::GgufTensorOutOfBounds,
             fmt::format("{} bytes at offset {} (file offset {}) end at {}, past the end of the file at {}", t.nbytes,
                         t.offset, out_.data_offset + t.offset, end, file_.size()),
             t.name);
      if (t.nbytes > 0) by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorRecord& a = *by_offset[i - 1];
      const GgufTensorRecord& b = *by_offset[i];
      if (a.offset + a.nbytes > b.offset)
        fail(ErrorCode::GgufTensorOverlap,
             fmt::format("bytes [{}, {}) overlap tensor '{}' at [{}, {}) of the data section", b.offset,
                         b.offset + b.nbytes, a.name, a.offset, a.offset + a.nbytes),
             b.name);
    }
  }

  const ByteSource& file_;
  Cursor in_;
  GgufFile& out_;
  uint64_t n_kv_ = 0;
  uint64_t n_tensors_ = 0;
};

}  // namespace

GgufFile read_gguf(const ByteSource& file) {
  GgufFile out;
  out.path = file.name();
  Parser(file, out).run();
  return out;
}

GgufFile read_gguf(const std::string& path) { return read_gguf(*local_opener()->open(path)); }

}  // namespace wl
