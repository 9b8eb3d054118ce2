// GGUF: header, metadata, tensor infos and data ranges, then the catalogue the "gguf" format entry
// presents from them (Llama names, head counts, rotary row order). The input has no other splits
// beside it.
#include "fuzz_input.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const wl::MemoryOpener no_other_files;
  try {
    wl::gguf_format().read_catalogue(*wl::fuzz::source(data, size), no_other_files);
  } catch (const wl::Error&) {
  }
  return 0;
}
