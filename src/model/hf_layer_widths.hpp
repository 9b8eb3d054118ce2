// The widths of each layer of a pruned model, from config.json: intermediate_size as a list of
// per-layer ints (Gemma 3n's convention), DeciLM-7B's num_key_value_heads_per_layer, and the
// block_configs of NVIDIA's DeciLM / Nemotron-NAS models, read as vLLM's nemotron_nas.py reads them.
#pragma once

#include <string>

#include "model/config_fields.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

// Whether `type` is a DeciLM / Nemotron-NAS model_type (block_configs, Llama's tensor names).
bool decilm_family(const std::string& type);

// Sets c.intermediate_size and c.num_kv_heads (the widest layer's) and c.layer_widths (left empty
// when every layer has the same widths and runs both sub-blocks). c.num_layers, c.num_heads,
// c.hidden_size and c.hidden_act must be read already.
void read_layer_widths(const JsonFields& f, const std::string& type, LlamaConfig& c);

// block_configs describing `c`'s layers, as read_layer_widths reads them back.
nlohmann::json block_configs_json(const LlamaConfig& c);

}  // namespace wl
