// The fields of a model description that change its math, compared between the source and what an
// output format would make of it, so that an output is refused rather than run differently.
#pragma once

#include <string>

#include "weightloader/engine/llama_config.hpp"

namespace wl {

// InvalidArgument naming `origin` and the first field where `read` (the model as `target` would
// run it, e.g. "GGUF: llama.cpp's 'llama'") differs from `source`.
void refuse_model_change(const LlamaConfig& source, const LlamaConfig& read, const std::string& target,
                         const std::string& origin);

// The model llama2.c's run.c computes with `c`'s sizes: SiLU, whole-head rotary with head_dim =
// hidden / heads, one norm per sublayer, eps 1e-5 and theta 10000, no windows, soft-caps,
// experts or rope scaling.
LlamaConfig as_llama2c_runs(const LlamaConfig& c);

}  // namespace wl
