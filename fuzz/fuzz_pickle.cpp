// PyTorch's data.pkl: the restricted unpickler, then the search for the state dict in its result.
#include <string_view>

#include "formats/pytorch/pickle.hpp"
#include "formats/pytorch/state_dict.hpp"
#include "weightloader/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wl::pytorch::Pickle pickle =
        wl::pytorch::unpickle(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    wl::pytorch::find_state_dict(pickle, "", "fuzz");
  } catch (const wl::Error&) {
  }
  return 0;
}
