// Which files of a Hugging Face repository or model directory are weights, and which of them a
// load needs: the one rule that the hf loader, the cache reader and the hub downloader share.
#include "hf_cache/hf_weights_files.hpp"

#include <algorithm>

#include "weightloader/hf_cache.hpp"

namespace wl {

bool is_hf_safetensors_file(const std::string& name) { return name.ends_with(".safetensors"); }

// PyTorch weight files, without optimizer/scheduler/trainer state.
bool is_hf_pytorch_weights_file(const std::string& name) {
  static const char* leftovers[] = {"optimizer", "scheduler", "training_args", "trainer_state", "rng_state", "scaler"};
  for (const char* l : leftovers)
    if (name.starts_with(l)) return false;
  return name.ends_with(".bin") && (name.starts_with("pytorch_model") || name.starts_with("model"));
}

bool is_hf_weights_file(const std::string& name) {
  return is_hf_safetensors_file(name) || is_hf_pytorch_weights_file(name) || name == "model.safetensors.index.json" ||
         name == "pytorch_model.bin.index.json";
}

HfFileChoice choose_hf_files(const std::vector<std::string>& repo_files) {
  static const char* beside[] = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer.model",
                                 "tokenizer_config.json"};
  HfFileChoice choice;
  std::vector<std::string> top;  // the loader reads the model directory itself, not its subfolders
  for (const std::string& f : repo_files)
    if (f.find('/') == std::string::npos) top.push_back(f);
  std::sort(top.begin(), top.end());
  const auto has = [&](const std::string& name) { return std::binary_search(top.begin(), top.end(), name); };
  for (const char* name : beside)
    if (has(name)) choice.files.push_back(name);
  const auto take = [&](bool (*wanted)(const std::string&)) {
    const size_t before = choice.files.size();
    for (const std::string& f : top)
      if (wanted(f)) choice.files.push_back(f);
    return choice.files.size() > before;
  };
  const auto take_index = [&](const char* index) {
    if (!has(index)) return false;
    choice.index = index;
    choice.files.push_back(index);
    return true;
  };
  // The same order of preference as open_weights below.
  if (!take_index("model.safetensors.index.json") && !take(is_hf_safetensors_file) && !take_index("pytorch_model.bin.index.json"))
    take(is_hf_pytorch_weights_file);
  return choice;
}

}  // namespace wl
