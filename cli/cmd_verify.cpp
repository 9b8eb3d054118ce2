#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/verify_checkpoint.hpp"

namespace wl::cli {

void add_verify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "verify",
      "read every tensor once and report NaN/Inf counts, all-zero tensors, files shorter than their headers claim, "
      "Hugging Face cache blobs whose sha256 is not their name, and an index total_size that disagrees; exit status "
      "0 when sound, 1 on any finding or error");
  struct Args {
    SourceOptions source;
    bool json = false, quiet = false, verbose = false;
  };
  auto a = std::make_shared<Args>();
  a->source.add_to(*cmd);
  cmd->add_flag("--json", a->json, "print every tensor's and file's check and the findings as JSON");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar");
  cmd->add_flag("-v,--verbose", a->verbose, "list every tensor and file");
  cmd->callback([a] {
    auto loader = a->source.open_loader().loader;
    auto source = loader->get_weights(a->source.path);
    VerifyOptions o;
    o.io = loader->options().io;  // --kw io=, concurrency=, ...
    o.io.progress = make_progress_bar(a->quiet || a->json);
    const VerifyReport report = verify_checkpoint(*source, o);
    fmt::print("{}", a->json ? report.to_json() + "\n" : report.to_string(a->verbose));
    if (!report.ok()) throw ExitStatus{1};
  });
}

}  // namespace wl::cli
