// A multimodal model's language model (LlamaConfig::multimodal) as the engine reads it: its tensors
// under language_model., the vision model's beside them. The configuration's checks, the GGUF
// writer and every rank's load see the checkpoint through this one mapping.
#pragma once

#include <memory>

#include "weightloader/checkpoint_names.hpp"
#include "weightloader/name_mapping.hpp"

namespace wl {

// Drops the tensors outside language_model. and strips that prefix from the others.
inline void keep_language_model(NameMapping& names) {
  names.drop(R"((?!language_model\.).*)");
  names.strip_prefix("language_model.");
}

// The checkpoint's language model under its own names, sharing the checkpoint's opened files.
inline std::unique_ptr<WeightSource> language_model_of(const WeightSource& checkpoint) {
  NameMapping names;
  keep_language_model(names);
  return with_normalised_names(checkpoint, names);
}

}  // namespace wl
