#include "convert/safetensors_shards.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wl {

ShardPlan plan_safetensors_shards(const std::vector<SafetensorsEntry>& entries, uint64_t max_bytes) {
  ShardPlan plan;
  std::vector<size_t> current;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t bytes = shape_numel(entries[i].shape) * dtype_size(entries[i].dtype);
    plan.total_size += bytes;
    if (bytes > max_bytes) {
      plan.shards.push_back({i});
      continue;
    }
    if (current_bytes + bytes > max_bytes) {
      plan.shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += bytes;
  }
  if (!current.empty()) plan.shards.push_back(std::move(current));
  return plan;
}

std::string safetensors_shard_name(size_t index, size_t count) {
  if (count == 1) return "model.safetensors";
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", index + 1, count);
}

std::string safetensors_index_json(const std::vector<SafetensorsEntry>& entries, const ShardPlan& plan) {
  nlohmann::json weight_map = nlohmann::json::object();  // std::map underneath: sorted keys
  for (size_t s = 0; s < plan.shards.size(); ++s)
    for (size_t i : plan.shards[s]) weight_map[entries[i].name] = safetensors_shard_name(s, plan.shards.size());
  const nlohmann::json index = {{"metadata", {{"total_size", plan.total_size}}}, {"weight_map", weight_map}};
  return index.dump(2, ' ', /*ensure_ascii=*/true) + "\n";  // Python's json.dumps escapes non-ASCII as \uXXXX
}

}  // namespace wl
