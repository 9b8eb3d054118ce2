// PyTorch checkpoints: the zip's end record and central directory, each local header, then the
// rest of the catalogue (data.pkl, byteorder, storages) for inputs that get that far.
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/pytorch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wl::read_pytorch_catalogue(*wl::fuzz::source(data, size));
  } catch (const wl::Error&) {
  }
  return 0;
}
