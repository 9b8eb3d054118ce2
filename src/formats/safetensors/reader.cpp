// Reading a safetensors file's catalogue, and the format entry that recognises such files.
#include <algorithm>
#include <array>
#include <cstdint>

#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

bool is_json_space(std::byte b) {
  const auto c = static_cast<char>(b);
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A plausible length prefix, then '{' after optional whitespace within the bytes at hand.
bool sniff_safetensors(std::span<const std::byte> head, uint64_t file_size) {
  uint64_t n = 0;
  try {
    n = safetensors_header_length(head.first(std::min<size_t>(head.size(), 8)), file_size, {});
  } catch (const Error&) {
    return false;
  }
  for (std::byte b : head.subspan(8, std::min<uint64_t>(n, head.size() - 8))) {
    if (is_json_space(b)) continue;
    return static_cast<char>(b) == '{';
  }
  return false;
}

// The header's bytes, after its length prefix has been checked.
std::string header_bytes(const ByteSource& file) {
  std::array<std::byte, 8> prefix{};
  const uint64_t got = file.read_up_to(0, prefix.data(), prefix.size());
  const uint64_t n = safetensors_header_length(std::span(prefix.data(), got), file.size(), file.name());
  return file.read_string(8, n);
}

}  // namespace

Catalogue read_safetensors_catalogue(const ByteSource& file) {
  const std::string header = header_bytes(file);
  return parse_safetensors_header(header, 8 + header.size(), file.size(), file.name());
}

SafetensorsWithComplex read_safetensors_catalogue_with_complex(const ByteSource& file) {
  const std::string header = header_bytes(file);
  return parse_safetensors_header_with_complex(header, 8 + header.size(), file.size(), file.name());
}

SafetensorsHeader read_stated_safetensors_header(const ByteSource& file) {
  const std::string header = header_bytes(file);
  return parse_stated_safetensors_header(header, 8 + header.size(), file.size(), file.name());
}

Catalogue read_safetensors_catalogue(const std::string& path) { return read_safetensors_catalogue(*local_opener()->open(path)); }

const FileFormat& safetensors_format() {
  static const FileFormat format{"safetensors", sniff_safetensors,
                                 [](const ByteSource& source, const Opener&) { return read_safetensors_catalogue(source); }};
  return format;
}

}  // namespace wl
