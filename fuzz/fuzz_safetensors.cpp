// safetensors: the 8-byte header length and the JSON header, checked against the input's size.
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wl::read_safetensors_catalogue(*wl::fuzz::source(data, size));
  } catch (const wl::Error&) {
  }
  return 0;
}
