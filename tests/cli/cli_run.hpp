// Runs the `weightloader` command as a user does, for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace wl::test {

struct CliRun {
  int status;
  std::string out;  // stdout, and stderr unless discarded
};

// Runs the CLI with `args` followed by `redirect` (which says where stderr goes).
inline CliRun run_cli(const std::string& args, const std::string& redirect) {
  const std::string cmd = std::string(WL_CLI_PATH) + " " + args + " " + redirect;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliRun cli(const std::string& args) { return run_cli(args, "2>&1"); }
inline CliRun cli_stdout(const std::string& args) { return run_cli(args, "2>/dev/null"); }

}  // namespace wl::test
