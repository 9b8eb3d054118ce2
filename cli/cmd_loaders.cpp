#include <fmt/format.h>

#include "cli_common.hpp"

namespace wl::cli {
namespace {

struct Args {
  bool verbose = false;
};

void run_loaders(const Args& a) {
  const WeightLoaderRegistry& registry = program_registry();
  for (const std::string& name : registry.list_available()) {
    const LoaderSpec spec = registry.spec(name);
    fmt::print("{:<16} {}\n", name, spec.description);
    if (a.verbose)
      for (const KwargSpec& k : spec.kwargs) fmt::print("  --kw {:<14} {}\n", k.name + "=", k.help);
  }
  if (a.verbose) {
    fmt::print("\nkwargs every loader accepts:\n");
    for (const KwargSpec& k : WeightLoaderRegistry::common_kwargs()) fmt::print("  --kw {:<14} {}\n", k.name + "=", k.help);
  }
}

}  // namespace

void add_loaders_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("loaders", "list the registered loaders and the kwargs each accepts");
  auto a = std::make_shared<Args>();
  cmd->add_flag("-v,--verbose", a->verbose, "also list every kwarg");
  cmd->callback([a] { run_loaders(*a); });
}

}  // namespace wl::cli
