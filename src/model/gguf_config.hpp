// The model description that a GGUF's keys give, read as llama.cpp reads them for each of its
// architectures that the engine runs. The converter reads its own output's keys back through it
// to refuse what a GGUF would make llama.cpp (and us) run differently.
#pragma once

#include <map>
#include <string>

#include "weightloader/engine/llama_config.hpp"

namespace wl {

// From `metadata` as a catalogue shows it (values as text; `file` names it in errors), for each
// general.architecture a family is written as (src/families/: llama, with expert_count Mixtral;
// qwen2, qwen2moe, qwen3, qwen3moe, gemma, gemma2, gemma3, phi3, olmo2, granite, granitemoe, glm4,
// deepseek2, gpt-oss, llama4),
// each reading the keys its family lists; the defaults are llama.cpp's where a key is optional.
// ConfigInvalid naming the key otherwise.
LlamaConfig llama_config_from_gguf(const std::map<std::string, std::string>& metadata, const std::string& file);

}  // namespace wl
