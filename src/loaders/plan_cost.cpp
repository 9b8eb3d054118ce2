// What a load plan will cost, and max_host_memory's refusal, before a tensor byte is read.
#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "loaders/zero_copy.hpp"
#include "weightloader/error.hpp"
#include "weightloader/load_plan.hpp"

namespace wl {

LoadCost plan_cost(const LoadPlan& plan, const WeightSource& given, const LoadOptions& options) {
  const WeightSource& source = plan.renamed ? *plan.renamed : given;  // the reads refer to its tensors
  LoadCost cost;
  std::vector<ReadRequest> requests;
  std::unordered_set<const Parameter*> counted;
  for (const PlannedRead& read : plan.reads) {
    // Backed by the file's mapping (execute_load): nothing read, no memory of its own.
    if (read.zero_copy_candidate && parameter_view(*read.param, *read.tensor, source)) continue;
    requests.push_back(read.request);
    if (!counted.insert(read.param).second) continue;
    const uint64_t bytes = read.param->data.numel() * dtype_size(read.param->dtype());
    // Where the load puts them (execute_load refuses parameters elsewhere): a plan's may be shapes only.
    (options.io.device.is_cpu() ? cost.host_parameters : cost.device_parameters) += bytes;
  }
  IoOptions io = options.io;
  if (!io.devices) io.devices = options.context.devices;
  const uint64_t budget = options.max_host_memory;
  // What is left for the engine once the parameters are in; at least a byte, so that its least is asked for.
  if (budget) io.host_budget = std::max<uint64_t>(1, budget > cost.host_parameters ? budget - cost.host_parameters : 0);
  cost.io = source.estimate_reads(requests, io);
  cost.file_bytes = cost.io.file_bytes;
  cost.bytes_read = cost.io.bytes_read;
  cost.peak_host = cost.host_parameters + cost.io.host_bytes;
  cost.min_host = cost.host_parameters + cost.io.min_host_bytes;
  cost.peak_device = cost.device_parameters;
  if (cost.io.bytes_per_s && *cost.io.bytes_per_s > 0) cost.seconds = double(cost.bytes_read) / *cost.io.bytes_per_s;
  if (budget && cost.peak_host > budget)
    throw Error(ErrorCode::OverBudget,
                fmt::format("max_host_memory={} is below the {} bytes this load needs at least: {} bytes of parameters "
                            "on the host and {} for the I/O engine with one reader thread and its least staging "
                            "(nothing was read)",
                            budget, cost.min_host, cost.host_parameters, cost.io.min_host_bytes),
                plan.source);
  return cost;
}

}  // namespace wl
