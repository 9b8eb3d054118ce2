// The built-in loaders: each registers itself into a registry; WeightLoaderRegistry::with_builtins() calls them all.
#pragma once

#include <string>

namespace wl {

class WeightLoaderRegistry;
class Opener;

// Registers every built-in loader (src/loaders/builtin_loaders.cpp: one line per loader).
void register_builtin_loaders(WeightLoaderRegistry& registry);

// "hf": a Hugging Face directory or a cached model id (src/loaders/hf_loader.cpp).
void register_hf_loader(WeightLoaderRegistry& registry);

// "local": a file or a directory of files in any single-file format (src/loaders/local_loader.cpp).
void register_local_loader(WeightLoaderRegistry& registry);

// "meta": Meta's params.json + consolidated.NN.pth directory (src/loaders/meta_loader.cpp).
void register_meta_loader(WeightLoaderRegistry& registry);
// Whether `dir` holds params.json and consolidated.00.pth.
bool is_meta_checkpoint(const Opener& files, const std::string& dir);

// "custom_binary": the seed's meta.txt + model.bin directory (src/loaders/custom_binary_loader.cpp).
void register_custom_binary_loader(WeightLoaderRegistry& registry);

}  // namespace wl
