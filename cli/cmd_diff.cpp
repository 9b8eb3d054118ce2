#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/diff_checkpoints.hpp"

namespace wl::cli {

void add_diff_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "diff",
      "compare two checkpoints of any formats tensor by tensor (names normalised, so a GGUF file and its Hugging Face "
      "original compare equal); exit status 0 when they match within tolerance, 1 when they differ or on an error");
  struct Args {
    SourceOptions a, b;
    double atol = 0, rtol = 0;
    bool json = false, quiet = false, verbose = false;
  };
  auto x = std::make_shared<Args>();
  cmd->add_option("a", x->a.path, "first checkpoint (file or directory)")->required();
  cmd->add_option("b", x->b.path, "second checkpoint; values agree when |a - b| <= atol + rtol * |b|")->required();
  cmd->add_option("--atol", x->atol, "absolute tolerance")->capture_default_str();
  cmd->add_option("--rtol", x->rtol, "relative tolerance")->capture_default_str();
  cmd->add_option("--kw", x->a.kw, "loader kwarg key=value for both sides (repeatable), e.g. --kw strip_prefix=model.");
  cmd->add_flag("--json", x->json, "print every tensor's comparison and the summary as JSON");
  cmd->add_flag("-q,--quiet", x->quiet, "no progress bar");
  cmd->add_flag("-v,--verbose", x->verbose, "list every tensor, not only those that differ");
  cmd->callback([x] {
    x->b.kw = x->a.kw;
    DiffOptions o;
    auto open = [&o](const SourceOptions& side) {
      auto loader = side.open_loader().loader;
      o.io = loader->options().io;  // --kw io=, concurrency=, ...
      return normalised_weights(*loader, side.path);
    };
    auto a = open(x->a), b = open(x->b);
    o.atol = x->atol;
    o.rtol = x->rtol;
    o.io.progress = make_progress_bar(x->quiet || x->json);
    const DiffReport report = diff_checkpoints(*a, *b, o);
    fmt::print("{}", x->json ? report.to_json() + "\n" : report.to_string(x->verbose));
    if (!report.matches()) throw ExitStatus{1};
  });
}

}  // namespace wl::cli
