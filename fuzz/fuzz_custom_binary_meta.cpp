// The custom binary format: meta.txt's lines and the sizes they declare, against an empty model.bin.
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wl::MemoryOpener checkpoint;
  checkpoint.add("in/meta.txt", wl::fuzz::region(data, size));
  checkpoint.add("in/model.bin", {});
  try {
    wl::read_custom_binary_catalogue(checkpoint, "in");
  } catch (const wl::Error&) {
  }
  return 0;
}
