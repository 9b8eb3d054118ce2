// Opening a path the way `--loader auto` does, and running the CLI, for the hostile-input tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {

struct Opened {
  std::unique_ptr<WeightLoader> loader;
  std::unique_ptr<WeightSource> source;
};

// The loader auto detection picks, and the catalogue it reads (throws what they throw).
inline Opened open_auto(const std::string& path) {
  const LoaderChoice choice = detect_loader(path);
  Opened o{WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs), nullptr};
  o.source = o.loader->get_weights(path);
  return o;
}

// Opens `path` as above and loads every tensor into a model that mirrors the checkpoint.
inline void load_auto(const std::string& path) {
  Opened o = open_auto(path);
  Model model = o.loader->mirror_model(*o.source);
  o.loader->load_weights(model, *o.source);
}

struct CliResult {
  int status = -1;  // the exit status; -1 when killed by a signal
  int signal = 0;
  std::string out;  // stdout and stderr together
};

// Runs `sh -c SCRIPT` where SCRIPT may use "$WL" for the CLI.
inline CliResult run_shell(const std::string& script) {
  const std::string cmd = "WL='" + std::string(WL_CLI_PATH) + "' sh -c '" + script + "' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  CliResult r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) r.status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (r.status > 128) r.signal = r.status - 128;  // how sh reports a child killed by signal N
  return r;
}

}  // namespace wl::test
