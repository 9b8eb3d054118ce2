// How a family's experts route and run beyond their counts and widths, the same whether the model is
// read from its config.json (hf_config.cpp) or from a GGUF (gguf_config.cpp).
#pragma once

#include "families/family.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

// gpt-oss: the router and the experts biased. Llama 4: the sigmoids of the top-k router logits, not
// renormalised, weight the chosen experts' inputs; its shared expert adds ungated. Others: unchanged.
void set_family_routing(const Family& family, MoeConfig& m);

}  // namespace wl
