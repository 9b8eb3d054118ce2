#include "weightloader/engine/plan.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/rank_load_options.hpp"
#include "engine/tensor_parallel.hpp"
#include "weightloader/byte_size.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

RankPlan plan_rank(unsigned rank, Model& model, const WeightSource& source, const LoadOptions& options) {
  const LoadPlan plan = plan_load(model, source, options);
  return {rank, model.parameters().size(), plan.missing, plan_cost(plan, source, options)};
}

std::string seconds_text(const LoadCost& c) {
  if (!c.seconds) return "not measured (no io profile remembers this storage: a load with io=auto measures it)";
  return fmt::format("{:.2f} s at {:.2f} GB/s ({})", *c.seconds, *c.io.bytes_per_s / 1e9, c.io.rate_from);
}

}  // namespace

ModelPlan plan_model(const WeightLoader& loader, const WeightSource& source, const PlanRequest& request) {
  ModelPlan out;
  out.source = source.origin();
  out.format = source.format();
  out.tensor_parallel_size = request.tensor_parallel_size;
  out.expert_parallel = request.expert_parallel;
  out.device = loader.options().io.device.name();
  out.max_host_memory = loader.options().max_host_memory;
  std::optional<LlamaConfig> config;
  try {
    if (!request.mirror) config = llama_config_from_source(*loader.canonical_source(source));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::ConfigMissing && e.code() != ErrorCode::ConfigInvalid) throw;
  }
  if (!config && request.tensor_parallel_size > 1)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("tensor_parallel_size {} needs a model configuration the engine reads, to split the "
                            "parameters as it would",
                            request.tensor_parallel_size),
                source.origin());
  if (!config) {
    if (!loader.options().io.device.is_cpu())
      throw Error(ErrorCode::InvalidArgument, "a plan for a device needs a model configuration the engine reads", source.origin());
    out.model = "a mirror of the checkpoint's tensors";
    out.dtype = loader.dtype() ? std::string(dtype_name(*loader.dtype())) : "as stored";
    Model model = loader.mirror_model(source);  // untouched heap pages: shapes only
    out.ranks.push_back(plan_rank(0, model, source, loader.options()));
    return out;
  }
  const DType dtype = loader.dtype().value_or(request.dtype);
  out.model = fmt::format("the engine's model from {} ({})", config->origin, config->features());
  out.dtype = std::string(dtype_name(dtype));
  LoadOptions base = loader.options();
  drop_unused_by_engine(base.names, *config);
  for (unsigned r = 0; r < request.tensor_parallel_size; ++r) {
    const RankPartition part = partition_rank(*config, r, request.tensor_parallel_size, request.expert_parallel);
    Model model = declare_rank_parameters(*config, part, dtype);  // on the host, untouched: shapes only
    out.ranks.push_back(plan_rank(r, model, source, rank_load_options(base, *config, part)));
  }
  return out;
}

std::string ModelPlan::to_string() const {
  std::string s = fmt::format("{} ({}): {}, {} rank{}{}, {} on {}{}\n", source, format, model, tensor_parallel_size,
                              tensor_parallel_size == 1 ? "" : "s", expert_parallel ? " (expert parallel)" : "", dtype,
                              device, max_host_memory ? ", max_host_memory " + human_bytes(max_host_memory) : "");
  for (const RankPlan& r : ranks) {
    const LoadCost& c = r.cost;
    s += fmt::format("rank {}: {} parameters, reads {}\n", r.rank, r.parameters, human_bytes(c.bytes_read));
    for (const auto& [file, bytes] : c.file_bytes) s += fmt::format("  {:>10}  {}\n", human_bytes(bytes), file);
    s += fmt::format("  peak host {} (parameters {}, I/O engine {}: {} thread{}, {} staging, {}{}), least {}\n",
                     human_bytes(c.peak_host), human_bytes(c.host_parameters), human_bytes(c.io.host_bytes), c.io.threads,
                     c.io.threads == 1 ? "" : "s", human_bytes(c.io.staging_bytes), io_mode_name(c.io.mode),
                     c.io.mode_reason.empty() ? "" : ": " + c.io.mode_reason, human_bytes(c.min_host));
    s += fmt::format("  peak device {}\n  expected {}\n", human_bytes(c.peak_device), seconds_text(c));
    if (!r.missing.empty()) s += fmt::format("  {} parameter(s) nothing fills, e.g. {}\n", r.missing.size(), r.missing.front());
  }
  return s;
}

std::string ModelPlan::to_json() const {
  nlohmann::json j;
  j["source"] = source;
  j["format"] = format;
  j["model"] = model;
  j["tensor_parallel_size"] = tensor_parallel_size;
  j["expert_parallel"] = expert_parallel;
  j["dtype"] = dtype;
  j["device"] = device;
  j["max_host_memory"] = max_host_memory;
  j["ranks"] = nlohmann::json::array();
  for (const RankPlan& r : ranks) {
    const LoadCost& c = r.cost;
    j["ranks"].push_back({{"rank", r.rank},
                          {"parameters", r.parameters},
                          {"missing", r.missing},
                          {"files", c.file_bytes},
                          {"bytes_read", c.bytes_read},
                          {"host_parameters", c.host_parameters},
                          {"device_parameters", c.device_parameters},
                          {"io",
                           {{"threads", c.io.threads},
                            {"staging_bytes", c.io.staging_bytes},
                            {"mode", io_mode_name(c.io.mode)},
                            {"mode_reason", c.io.mode_reason},
                            {"host_bytes", c.io.host_bytes},
                            {"min_host_bytes", c.io.min_host_bytes}}},
                          {"peak_host", c.peak_host},
                          {"min_host", c.min_host},
                          {"peak_device", c.peak_device},
                          {"seconds", c.seconds ? nlohmann::json(*c.seconds) : nlohmann::json(nullptr)},
                          {"rate_from", c.seconds ? c.io.rate_from : std::string("not measured")}});
  }
  return j.dump(2);
}

}  // namespace wl
