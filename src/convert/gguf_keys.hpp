// A GGUF's model keys, per architecture as llama.cpp's convert_hf_to_gguf.py writes them, checked
// by reading them back as llama.cpp does: what the keys cannot say is refused, naming it.
#pragma once

#include <cstdint>
#include <string>

#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/formats/gguf.hpp"

namespace wl {

struct GgufModel {
  LlamaConfig config;  // the source's configuration, or a Llama of its tensors' shapes and the overrides
  std::string arch;    // llama.cpp's general.architecture for it
  bool configured = false;  // config came from the source's own configuration
};

// The model `s` holds, with the head counts of `h` (the source's unless overridden). InvalidArgument
// for a family not written as GGUF yet.
GgufModel gguf_model(const WeightSource& s, const LlamaHeads& h);

// general.*, the {arch}.* keys and tokenizer.ggml.* (from `tokenizer`; "none" without). InvalidArgument
// naming the field when llama.cpp would read the keys as another model than the source's.
GgufMetadata gguf_model_metadata(const GgufModel& m, const WeightSource& s, uint32_t file_type,
                                 const std::string& tokenizer);

}  // namespace wl
