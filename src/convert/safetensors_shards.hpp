// Splitting a safetensors checkpoint into shards the way Hugging Face's save_pretrained does
// (huggingface_hub's split_state_dict_into_shards_factory), and the index that names them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/formats/safetensors.hpp"

namespace wl {

inline constexpr const char* kSafetensorsIndexName = "model.safetensors.index.json";

struct ShardPlan {
  std::vector<std::vector<size_t>> shards;  // indices into the entries, per shard, in file order
  uint64_t total_size = 0;                  // tensor bytes of all shards
};

// In the entries' order: a tensor that would tip the current shard over `max_bytes` starts a new
// one; a tensor larger than `max_bytes` gets a shard of its own, placed before the shard being
// filled (as Hugging Face's rule does).
ShardPlan plan_safetensors_shards(const std::vector<SafetensorsEntry>& entries, uint64_t max_bytes);

// model-00002-of-00003.safetensors; model.safetensors when there is one shard.
std::string safetensors_shard_name(size_t index, size_t count);

// model.safetensors.index.json as save_pretrained writes it: {"metadata": {"total_size": N},
// "weight_map": {name: file}}, keys sorted, indented by 2, non-ASCII escaped, ending in a newline.
std::string safetensors_index_json(const std::vector<SafetensorsEntry>& entries, const ShardPlan& plan);

}  // namespace wl
