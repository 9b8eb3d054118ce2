#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"

namespace wl::cli {

void add_load_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "load", "load a checkpoint into a model that mirrors it (converting to --dtype) and print the load report");
  auto opts = std::make_shared<SourceOptions>();
  auto dtype = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto verbose = std::make_shared<bool>(false);
  auto io = std::make_shared<std::string>();
  auto staging = std::make_shared<int64_t>(-1);
  auto device = std::make_shared<std::string>();
  opts->add_to(*cmd);
  cmd->add_option("--io", *io, "auto, mmap, pread or direct (O_DIRECT); same as --kw io=")
      ->check(CLI::IsMember({"auto", "mmap", "pread", "direct"}));
  cmd->add_option("--staging-bytes", *staging, "staging memory bound for conversion, all threads; same as --kw staging_bytes=");
  cmd->add_option("--device", *device,
                  "where the parameters live: cpu (default), cuda or cuda:N (read and converted on the host, copied "
                  "through pinned buffers of --staging-bytes); same as --kw device=");
  cmd->add_option("--dtype", *dtype, "convert every tensor to this dtype (bf16, f16, f32, ...); same as --kw dtype=");
  cmd->add_flag("--json", *json, "print the report as JSON");
  cmd->add_flag("-q,--quiet", *quiet, "no progress bar");
  cmd->add_flag("-v,--verbose", *verbose, "list every name in the report");
  cmd->callback([=] {
    LoaderChoice choice = opts->choice();
    if (!dtype->empty()) choice.kwargs["dtype"] = *dtype;
    if (!io->empty()) choice.kwargs["io"] = *io;
    if (!device->empty()) choice.kwargs["device"] = *device;
    if (*staging >= 0) choice.kwargs["staging_bytes"] = std::to_string(*staging);
    const std::string& loader_name = choice.name;
    auto loader = WeightLoaderRegistry::global().create(loader_name, choice.kwargs);
    loader->options().io.progress = make_progress_bar(*quiet);
    auto source = loader->get_weights(opts->path);
    Model model = loader->mirror_model(*source);
    const uint64_t rss_before = peak_rss_bytes();
    LoadReport report = loader->load_weights(model, *source);
    const uint64_t rss = peak_rss_bytes();
    if (*json) {
      nlohmann::json j = nlohmann::json::parse(report.to_json());
      j["loader"] = loader_name;
      j["parameter_bytes"] = model.total_bytes();
      j["peak_rss_bytes"] = rss;
      j["rss_before_load_bytes"] = rss_before;
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("loader      {}\n{}", loader_name, report.to_string(*verbose));
    fmt::print("memory      parameters {}, peak RSS {} (before the load {})\n", human_bytes(model.total_bytes()),
               human_bytes(rss), human_bytes(rss_before));
  });
}

}  // namespace wl::cli
