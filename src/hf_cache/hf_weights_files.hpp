// Which files of a Hugging Face model directory are weights (choose_hf_files, in hf_cache.hpp,
// picks those a load needs from a repository's list).
#pragma once

#include <string>

namespace wl {

bool is_hf_safetensors_file(const std::string& name);
// pytorch_model*.bin / model*.bin, never optimizer, scheduler or trainer state.
bool is_hf_pytorch_weights_file(const std::string& name);
// Either, or the index of either: what the hf loader reads as weights.
bool is_hf_weights_file(const std::string& name);

}  // namespace wl
