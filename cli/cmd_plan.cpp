#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/engine/plan.hpp"

namespace wl::cli {
namespace {

struct Args {
  SourceOptions source;
  unsigned tp = 1;
  bool expert_parallel = false, mirror = false, json = false;
  ReadOptions reads;
  std::string max_host_memory;
};

void run_plan(const Args& a) {
  Kwargs extra;
  a.reads.into(extra);
  if (!a.max_host_memory.empty()) extra["max_host_memory"] = a.max_host_memory;
  SourceOptions::Opened opened = a.source.open_loader(extra);
  auto source = opened.loader->get_weights(a.source.path);
  const ModelPlan plan = plan_model(*opened.loader, *source, {a.tp, a.expert_parallel, a.mirror});
  fmt::print("{}\n", a.json ? plan.to_json() : plan.to_string());
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan",
                                 "per rank: the bytes a load will read from each file, its peak host and device memory "
                                 "and the time this machine's measured rates give, reading no tensor data");
  auto a = std::make_shared<Args>();
  a->source.add_to(*cmd);
  cmd->add_option("--tp", a->tp, "tensor-parallel ranks, split as the engine splits the model (needs its configuration)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_flag("--expert-parallel", a->expert_parallel, "ranks hold whole experts, not slices of all");
  cmd->add_flag("--mirror", a->mirror, "plan a model that mirrors the checkpoint (what `load` fills), even with a configuration");
  a->reads.add_to(*cmd);
  cmd->add_option("--max-host-memory", a->max_host_memory,
                  "the host memory budget to check (2GiB, or 0.5 of RAM); same as --kw max_host_memory=");
  cmd->add_flag("--json", a->json, "print the plan as JSON");
  cmd->callback([a] { run_plan(*a); });
}

}  // namespace wl::cli
