#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"

namespace wl::cli {
namespace {

struct Args {
  SourceOptions source;
  ReadOptions reads;
  std::string verify;
  bool json = false, quiet = false, verbose = false;
};

void run_load(const Args& a) {
  Kwargs extra;
  a.reads.into(extra);
  if (!a.verify.empty()) extra["verify"] = a.verify;
  SourceOptions::Opened opened = a.source.open_loader(extra);
  const WeightLoader& loader = *opened.loader;
  LoadOptions call = loader.options();
  call.io.progress = make_progress_bar(a.quiet);
  auto source = loader.get_weights(a.source.path, call);
  Model model = loader.mirror_model(*source);
  const uint64_t rss_before = peak_rss_bytes();
  LoadReport report = loader.load_weights(model, *source, call);
  const uint64_t rss = peak_rss_bytes();
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(report.to_json());
    j["loader"] = opened.name;
    j["parameter_bytes"] = model.total_bytes();
    j["peak_rss_bytes"] = rss;
    j["rss_before_load_bytes"] = rss_before;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("loader      {}\n{}", opened.name, report.to_string(a.verbose));
  fmt::print("memory      parameters {}, peak RSS {} (before the load {})\n", human_bytes(model.total_bytes()),
             human_bytes(rss), human_bytes(rss_before));
}

}  // namespace

void add_load_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "load", "load a checkpoint into a model that mirrors it (converting to --dtype) and print the load report");
  auto a = std::make_shared<Args>();
  a->source.add_to(*cmd);
  a->reads.add_to(*cmd);
  cmd->add_option("--verify", a->verify,
                  "sha256: hash each file from the bytes the load reads and fail unless it has the digest its cache "
                  "blob name, ETag, <file>.sha256 or SHA256SUMS names; same as --kw verify=")
      ->check(CLI::IsMember({"sha256", "none"}));
  cmd->add_flag("--json", a->json, "print the report as JSON");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar");
  cmd->add_flag("-v,--verbose", a->verbose, "list every name in the report");
  cmd->callback([a] { run_load(*a); });
}

}  // namespace wl::cli
