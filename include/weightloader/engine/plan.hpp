// weightloader plan: what loading a checkpoint will read and hold, per rank, without reading a
// tensor byte. The parameters are the engine's per-rank model when the checkpoint has a
// configuration it runs (what LLM declares for tensor_parallel_size ranks), else a mirror of the
// checkpoint's tensors (one rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/export.hpp"
#include "weightloader/load_plan.hpp"
#include "weightloader/loader.hpp"

namespace wl {

struct PlanRequest {
  unsigned tensor_parallel_size = 1;
  bool expert_parallel = false;
  bool mirror = false;  // a mirror of the checkpoint even where it has a configuration (what `load` fills)
  DType dtype = DType::F32;  // the engine's parameters when the loader sets no dtype (as LLMOptions::dtype)
};

struct WL_API RankPlan {
  unsigned rank = 0;
  size_t parameters = 0;             // parameters declared
  std::vector<std::string> missing;  // parameters (or shards) nothing fills
  LoadCost cost;
};

struct WL_API ModelPlan {
  std::string source, format;
  std::string model;  // "config.json (llama, ...)" or "a mirror of the checkpoint's tensors"
  unsigned tensor_parallel_size = 1;
  bool expert_parallel = false;
  std::string dtype;   // of the parameters, "as stored" for a mirror without a dtype
  std::string device;
  uint64_t max_host_memory = 0;  // the budget it was checked against; 0: none
  std::vector<RankPlan> ranks;

  std::string to_string() const;  // a few lines per rank
  std::string to_json() const;
};

// Plans each rank's load under `loader`'s options (dtype, device, io, max_host_memory: OverBudget
// when a rank cannot fit). InvalidArgument for tensor_parallel_size > 1 without a configuration
// the engine reads (the split of a mirror's tensors would be a guess).
WL_API ModelPlan plan_model(const WeightLoader& loader, const WeightSource& source, const PlanRequest& request);

}  // namespace wl
