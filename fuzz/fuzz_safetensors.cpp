// safetensors: the 8-byte header length and the JSON header, checked against the input's size.
#include <span>

#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const uint64_t length = wl::safetensors_header_length(bytes.first(std::min<size_t>(size, 8)), size, "fuzz");
    const std::string_view header(reinterpret_cast<const char*>(data) + 8, length);
    wl::parse_safetensors_header(header, 8 + length, size, "fuzz");
  } catch (const wl::Error&) {
  }
  return 0;
}
