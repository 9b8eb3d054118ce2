// A Hugging Face config.json as the hf loader passes it on: the Llama head counts read from it.
#include <string>

#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wl::WeightSource source("safetensors", "fuzz",
                                wl::Catalogue{{}, {}, {{"config.json", std::string(reinterpret_cast<const char*>(data), size)}}});
  try {
    wl::llama_heads_from_metadata(source);
  } catch (const wl::Error&) {
  }
  return 0;
}
