// llama2.c: the header and the file size it implies, then the tensor layout of a valid header.
// Input: the file's size as 8 little-endian bytes, then its first bytes (up to 256), so that huge
// headers can be tried against any size without files of that size.
#include <cstring>
#include <span>

#include "formats/llama2c/header.hpp"
#include "formats/llama2c/layout.hpp"
#include "weightloader/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t file_size = 0;
  std::memcpy(&file_size, data, 8);
  const auto head = std::as_bytes(std::span(data + 8, std::min<size_t>(size - 8, wl::llama2c::kHeaderBytes)));
  try {
    const wl::Llama2cHeader h = wl::llama2c::parse_header(head, file_size, "fuzz");
    for (const wl::llama2c::Entry& e : wl::llama2c::layout(h)) wl::llama2c::stored_bytes(e, h);
  } catch (const wl::Error&) {
  }
  return 0;
}
