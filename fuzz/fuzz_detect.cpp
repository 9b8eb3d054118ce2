// Format detection, which `--loader auto` runs on any file: every format's sniffer on the bytes.
#include "fuzz_input.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wl::builtin_formats().detect(*wl::fuzz::source(data, size));
  } catch (const wl::Error&) {
  }
  return 0;
}
