// GGUF output: each family written as llama.cpp's convert_hf_to_gguf.py writes it (architecture,
// keys, tensor names, q/k layout, Gemma's norms, Mixtral's expert stacks), or refused, naming what
// llama.cpp would run differently.
#pragma once

#include <memory>
#include <string>

#include "convert/tally.hpp"
#include "weightloader/convert_checkpoint.hpp"

namespace wl {

// What the GGUF holds of a multimodal checkpoint (its configuration's multimodal): the language
// model alone, under its own names, as llama.cpp's converter writes it (the vision model goes to a
// separate mmproj file, which this does not write). Null for any other checkpoint: all of it.
std::unique_ptr<WeightSource> gguf_language_model(const WeightSource& checkpoint);

// Streams `s` into the GGUF file `out`; returns the tensor bytes written.
uint64_t write_gguf_output(const WeightSource& s, const std::string& out, const ConvertOptions& o, Tally& tally);

}  // namespace wl
