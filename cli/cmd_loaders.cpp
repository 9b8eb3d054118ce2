#include <fmt/format.h>

#include "cli_common.hpp"

namespace wl::cli {

void add_loaders_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("loaders", "list the registered loaders and the kwargs each accepts");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("-v,--verbose", *verbose, "also list every kwarg");
  cmd->callback([verbose] {
    const WeightLoaderRegistry& registry = WeightLoaderRegistry::global();
    for (const std::string& name : registry.list_available()) {
      const LoaderSpec spec = registry.spec(name);
      fmt::print("{:<16} {}\n", name, spec.description);
      if (*verbose)
        for (const KwargSpec& k : spec.kwargs) fmt::print("  --kw {:<14} {}\n", k.name + "=", k.help);
    }
    if (*verbose) {
      fmt::print("\nkwargs every loader accepts:\n");
      for (const KwargSpec& k : WeightLoaderRegistry::common_kwargs()) fmt::print("  --kw {:<14} {}\n", k.name + "=", k.help);
    }
  });
}

}  // namespace wl::cli
