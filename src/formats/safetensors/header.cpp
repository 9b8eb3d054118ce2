// The safetensors header validator: bytes in, catalogue or the first broken rule out. No I/O.
#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "formats/safetensors/json_doc.hpp"
#include "core/utf8.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

using nlohmann::json;

// dtypes the reference implementation knows but weightloader has no element type for, with their bit
// widths. The header is validated with them like any other dtype; then the sub-byte floats are
// catalogued with their decoder (safetensors_subbyte_decoder), complex ones as pairs where the reader
// asks for them (safetensors_complex_part), and the others refused.
constexpr std::pair<std::string_view, unsigned> kForeignDTypes[] = {
    {"F4", 4}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"C64", 64},
};

// One tensor entry as the header states it.
struct Entry {
  std::string name;
  std::string dtype_name;
  std::optional<DType> dtype;  // empty for a foreign dtype
  unsigned bits = 0;           // bits per element
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// A short rendering of a JSON value for messages.
std::string brief(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

uint64_t unsigned_value(const json& value, const std::string& what, const std::string& file, const std::string& name) {
  if (!value.is_number_unsigned())
    throw Error(ErrorCode::InvalidHeaderDeserialization,
                fmt::format("{} is {}, not an unsigned 64-bit integer", what, brief(value)), file, name);
  return value.get<uint64_t>();
}

const json& field(const json& entry, const char* key, const std::string& file, const std::string& name) {
  const auto it = entry.find(key);
  if (it == entry.end())
    throw Error(ErrorCode::InvalidHeaderDeserialization, fmt::format("missing field \"{}\"", key), file, name);
  return *it;
}

void parse_dtype_field(const json& value, Entry& entry, const std::string& file) {
  if (!value.is_string())
    throw Error(ErrorCode::InvalidHeaderDeserialization, fmt::format("dtype is {}, not a string", brief(value)), file,
                entry.name);
  entry.dtype_name = value.get<std::string>();
  if ((entry.dtype = parse_dtype(entry.dtype_name))) {
    entry.bits = static_cast<unsigned>(dtype_size(*entry.dtype) * 8);
    return;
  }
  for (const auto& [name, bits] : kForeignDTypes)
    if (name == entry.dtype_name) {
      entry.bits = bits;
      return;
    }
  throw Error(ErrorCode::UnsupportedDType, fmt::format("unknown dtype \"{}\"", entry.dtype_name), file, entry.name);
}

Entry parse_entry(const std::string& name, const json& value, const std::string& file) {
  if (!value.is_object())
    throw Error(ErrorCode::InvalidHeaderDeserialization,
                fmt::format("tensor entry is {}, not an object with dtype, shape and data_offsets", brief(value)), file,
                name);
  Entry entry;
  entry.name = name;
  parse_dtype_field(field(value, "dtype", file, name), entry, file);

  const json& shape = field(value, "shape", file, name);
  if (!shape.is_array())
    throw Error(ErrorCode::InvalidHeaderDeserialization, fmt::format("shape is {}, not an array", brief(shape)), file,
                name);
  for (size_t i = 0; i < shape.size(); ++i)
    entry.shape.push_back(unsigned_value(shape[i], fmt::format("shape[{}]", i), file, name));

  const json& offsets = field(value, "data_offsets", file, name);
  if (!offsets.is_array() || offsets.size() != 2)
    throw Error(ErrorCode::InvalidHeaderDeserialization,
                fmt::format("data_offsets is {}, not an array [begin, end]", brief(offsets)), file, name);
  entry.begin = unsigned_value(offsets[0], "data_offsets[0]", file, name);
  entry.end = unsigned_value(offsets[1], "data_offsets[1]", file, name);
  return entry;
}

std::optional<std::map<std::string, std::string>> parse_metadata(const json& value, const std::string& file) {
  if (value.is_null()) return std::nullopt;  // the reference reads null as "no metadata"
  std::map<std::string, std::string> metadata;
  if (!value.is_object())
    throw Error(ErrorCode::InvalidMetadata,
                fmt::format("__metadata__ is {}, not an object of strings", brief(value)), file);
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      throw Error(ErrorCode::InvalidMetadata,
                  fmt::format("__metadata__ value of \"{}\" is {}, not a string", key, brief(item)), file);
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

void reject_repeated_key(const safetensors::RepeatedKey& repeated, const std::string& file) {
  if (repeated.depth == 1) {
    if (repeated.key == "__metadata__") throw Error(ErrorCode::InvalidMetadata, "__metadata__ given twice", file);
    throw Error(ErrorCode::DuplicateTensorName, "tensor name given twice in the header", file, repeated.key);
  }
  if (repeated.depth == 2) {
    if (repeated.parent == "__metadata__")
      throw Error(ErrorCode::InvalidMetadata, fmt::format("__metadata__ key \"{}\" given twice", repeated.key), file);
    throw Error(ErrorCode::InvalidHeaderDeserialization, fmt::format("field \"{}\" given twice", repeated.key), file,
                repeated.parent);
  }
  // Deeper repeats sit inside fields the reference ignores.
}

// The reference's per-tensor rules, in its order, over entries sorted by offsets. Returns where the
// last tensor's data ends, relative to the data buffer.
uint64_t check_layout(const std::vector<Entry>& entries, const std::string& file) {
  uint64_t start = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    const std::string offsets = fmt::format("data_offsets [{}, {}]", e.begin, e.end);
    if (e.end < e.begin)
      throw Error(ErrorCode::InvalidOffset, offsets + " end before they begin", file, e.name);
    if (e.begin > start)
      throw Error(ErrorCode::InvalidOffset,
                  fmt::format("{} leave a gap of {} bytes after {} (which ends at {})", offsets, e.begin - start,
                              previous ? "tensor '" + previous->name + "'" : "the start of the data buffer", start),
                  file, e.name);
    if (e.begin < start)
      throw Error(ErrorCode::InvalidOffset,
                  fmt::format("{} overlap tensor '{}', which ends at {}", offsets, previous->name, start), file, e.name);
    start = e.end;
    previous = &e;

    const std::string described = e.dtype_name + " " + shape_to_string(e.shape);
    uint64_t numel = 1;
    for (uint64_t dim : e.shape)
      if (__builtin_mul_overflow(numel, dim, &numel))
        throw Error(ErrorCode::ValidationOverflow,
                    fmt::format("the element count of shape {} overflows u64", shape_to_string(e.shape)), file, e.name);
    uint64_t bits = 0;
    if (__builtin_mul_overflow(numel, uint64_t{e.bits}, &bits))
      throw Error(ErrorCode::ValidationOverflow,
                  fmt::format("the size in bits of {} ({} elements of {} bits) overflows u64", described, numel,
                              e.bits),
                  file, e.name);
    if (bits % 8 != 0)
      throw Error(ErrorCode::MisalignedSlice,
                  fmt::format("{} holds {} elements of {} bits = {} bits, not a whole number of bytes", described,
                              numel, e.bits, bits),
                  file, e.name);
    if (e.end - e.begin != bits / 8)
      throw Error(ErrorCode::TensorInvalidInfo,
                  fmt::format("{} span {} bytes but {} needs {}", offsets, e.end - e.begin, described, bits / 8), file,
                  e.name);
  }
  return start;
}

}  // namespace

uint64_t safetensors_header_length(std::span<const std::byte> prefix, uint64_t file_size, const std::string& file) {
  if (file_size < 8 || prefix.size() < 8)
    throw Error(ErrorCode::HeaderTooSmall,
                fmt::format("file is {} bytes, shorter than the 8-byte header length", file_size), file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(prefix[static_cast<size_t>(i)]);
  if (n > kSafetensorsMaxHeaderBytes)
    throw Error(ErrorCode::HeaderTooLarge,
                fmt::format("header length {} is above the limit of {} bytes", n, kSafetensorsMaxHeaderBytes), file);
  if (8 + n > file_size)
    throw Error(ErrorCode::InvalidHeaderLength,
                fmt::format("header length {} runs past the end of the file ({} bytes, so at most {} header bytes)", n,
                            file_size, file_size - 8),
                file);
  return n;
}

SafetensorsHeader parse_stated_safetensors_header(std::string_view header, uint64_t data_start, uint64_t file_size,
                                                  const std::string& file) {
  if (data_start > file_size)
    throw Error(ErrorCode::InvalidHeaderLength,
                fmt::format("data buffer would start at {}, past the end of the file ({} bytes)", data_start, file_size),
                file);
  if (const auto bad = safetensors::find_invalid_utf8(header))
    throw Error(ErrorCode::InvalidHeader,
                fmt::format("header is not valid UTF-8 (byte 0x{:02x} at header offset {})",
                            static_cast<uint8_t>(header[*bad]), *bad),
                file);
  const safetensors::JsonDocument doc = safetensors::parse_json_document(header);
  if (!doc.error.empty())
    throw Error(ErrorCode::InvalidHeaderDeserialization, "header is not JSON: " + doc.error, file);
  if (!doc.value.is_object())
    throw Error(ErrorCode::InvalidHeaderStart,
                fmt::format("header is JSON {}, not an object of tensors", doc.value.type_name()), file);
  if (doc.repeated) reject_repeated_key(*doc.repeated, file);

  SafetensorsHeader stated;
  std::vector<Entry> entries;
  entries.reserve(doc.value.size());
  for (const auto& [name, value] : doc.value.items()) {
    if (name == "__metadata__")
      stated.metadata = parse_metadata(value, file);
    else
      entries.push_back(parse_entry(name, value, file));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });

  const uint64_t buffer_end = check_layout(entries, file);
  const uint64_t buffer_size = file_size - data_start;
  if (buffer_end != buffer_size)
    throw Error(ErrorCode::MetadataIncompleteBuffer,
                fmt::format("the tensors cover {} bytes of data but the file holds {} after the header ({})",
                            buffer_end, buffer_size,
                            buffer_end < buffer_size ? fmt::format("{} trailing bytes", buffer_size - buffer_end)
                                                     : fmt::format("{} bytes missing", buffer_end - buffer_size)),
                file);

  stated.tensors.reserve(entries.size());
  for (Entry& e : entries)
    stated.tensors.push_back({std::move(e.name), std::move(e.dtype_name), e.dtype, std::move(e.shape),
                              data_start + e.begin, e.end - e.begin});
  return stated;
}

std::optional<DType> safetensors_complex_part(std::string_view dtype_name) {
  if (dtype_name == "C64") return DType::F32;
  return std::nullopt;
}

namespace {

// The catalogue of a stated header. complex: null to refuse a complex tensor as any other dtype the
// library lacks; else such tensors are catalogued as pairs of their part and their names added.
Catalogue catalogue_of(SafetensorsHeader stated, const std::string& file, std::vector<std::string>* complex) {
  Catalogue catalogue;
  catalogue.files = {file};  // every tensor's file: index 0
  catalogue.metadata = std::move(stated.metadata).value_or(std::map<std::string, std::string>{});
  catalogue.tensors.reserve(stated.tensors.size());
  for (SafetensorsHeader::Tensor& t : stated.tensors) {
    std::shared_ptr<const Decoder> decoder = t.dtype ? nullptr : safetensors_subbyte_decoder(t.dtype_name);
    const std::optional<DType> part = t.dtype || decoder || !complex ? std::nullopt : safetensors_complex_part(t.dtype_name);
    if (!t.dtype && !decoder && !part)
      throw Error(ErrorCode::UnsupportedDType,
                  fmt::format("dtype {} is valid safetensors but weightloader does not support it", t.dtype_name),
                  file, t.name);
    if (part) {
      complex->push_back(t.name);
      t.shape.push_back(2);
    }
    TensorInfo info;
    info.name = std::move(t.name);
    info.dtype = decoder ? decoder->output_dtype() : part ? *part : *t.dtype;
    info.decoder = std::move(decoder);
    info.shape = std::move(t.shape);
    info.offset = t.offset;
    info.nbytes = t.nbytes;
    catalogue.tensors.push_back(std::move(info));
  }
  return catalogue;
}

}  // namespace

Catalogue parse_safetensors_header(std::string_view header, uint64_t data_start, uint64_t file_size,
                                   const std::string& file) {
  return catalogue_of(parse_stated_safetensors_header(header, data_start, file_size, file), file, nullptr);
}

SafetensorsWithComplex parse_safetensors_header_with_complex(std::string_view header, uint64_t data_start,
                                                             uint64_t file_size, const std::string& file) {
  SafetensorsWithComplex out;
  out.catalogue = catalogue_of(parse_stated_safetensors_header(header, data_start, file_size, file), file, &out.complex);
  return out;
}

}  // namespace wl
