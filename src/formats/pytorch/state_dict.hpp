// Finding the state dict in an unpickled checkpoint and naming its tensors (rules in
// include/weightloader/formats/pytorch.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/pytorch/pickle.hpp"

namespace wl::pytorch {

// Dicts nested deeper than this (counting from the checkpoint's top level) are PickleLimitExceeded.
inline constexpr int kMaxDictNesting = 64;

struct NamedTensor {
  std::string name;
  uint32_t tensor = 0;  // index into Pickle::tensors
};

struct StateDict {
  std::string key;                    // the top-level key it sits under; empty for the top level itself
  std::vector<NamedTensor> tensors;   // in pickle order, nested dicts flattened with dotted names
};

// `key` empty: found automatically. Throws StateDictNotFound, StateDictAmbiguous,
// DuplicateTensorName and PickleLimitExceeded, naming `file`.
StateDict find_state_dict(const Pickle& pickle, const std::string& key, const std::string& file);

}  // namespace wl::pytorch
