// GGUF: header, metadata, tensor infos and data ranges, then the catalogue built from them
// (Llama names, head counts, rotary row order).
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wl::read_gguf_catalogue(wl::fuzz::as_file(data, size));
  } catch (const wl::Error&) {
  }
  return 0;
}
