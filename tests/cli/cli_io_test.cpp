// `weightloader load` I/O flags: --io, --staging-bytes, and the mode in the report.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "support/refused_io_uring.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

std::string cli_stdout(const std::string& args, int& status) {
  const std::string cmd = std::string(WL_CLI_PATH) + " " + args + " 2>/dev/null";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  status = WEXITSTATUS(::pclose(pipe));
  return out;
}

TEST(CliIo, EveryModeLoadsAndTheReportSaysWhichRan) {
  test::TempDir dir;
  int status = 0;
  cli_stdout("synth " + dir.path().string() + " --preset tiny", status);
  ASSERT_EQ(status, 0);
  for (const std::string mode : {"pread", "mmap", "direct", "uring", "auto"}) {
    if (mode == "uring" && !test::io_uring_allowed()) continue;  // refused in this process (seccomp)
    const std::string out =
        cli_stdout("load " + dir.path().string() + " --io " + mode + " --staging-bytes 1048576 --dtype bf16 --json -q", status);
    ASSERT_EQ(status, 0) << out;
    const auto j = nlohmann::json::parse(out);
    if (mode == "auto") {
      EXPECT_NE(j["io_mode"], "auto");
      EXPECT_NE(j["io_mode_reason"].get<std::string>().find("page cache"), std::string::npos);
    } else {
      EXPECT_EQ(j["io_mode"], mode);
    }
    EXPECT_EQ(j["staging_bound"], 1048576);
    EXPECT_LE(j["staging_bytes"].get<uint64_t>(), 1048576u);
  }
  const std::string text = cli_stdout("load " + dir.path().string() + " --io pread -q", status);
  EXPECT_NE(text.find("io          pread"), std::string::npos) << text;
  cli_stdout("load " + dir.path().string() + " --io floppy", status);
  EXPECT_NE(status, 0);  // an unknown mode is refused
}

}  // namespace
}  // namespace wl
