// `mpirun -np N weightloader generate`: one rank per process, rank 0 printing run.c's text and
// every rank's load report; the MPMD form giving one rank another path shows a failed rank's
// error once, naming it, and every rank exits non-zero. Skipped where mpirun is not installed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_util.hpp"
#include "cli/cli_run.hpp"

namespace wl {
namespace {

std::string stories(const char* file) { return (test::testdata_dir() / "llama2c-stories260K" / file).string(); }

#define WL_REQUIRE_MPIRUN()                                                                  \
  do {                                                                                       \
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found"; \
  } while (0)

// Runs `command` (mpirun's arguments, with "{cli}" for the weightloader command) under tests/mpi/mpirun.sh.
test::CliRun mpirun(const std::string& args, const std::string& redirect) {
  const std::string cmd = std::string(WL_MPIRUN) + " --mca btl self,vader " + fmt::format(fmt::runtime(args), fmt::arg("cli", WL_CLI_PATH)) +
                          " " + redirect;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(CliMpi, TwoProcessesPrintRunCsTextAndEveryRanksReport) {
  WL_REQUIRE_TESTDATA();
  WL_REQUIRE_MPIRUN();
  const std::string generate = fmt::format("generate --model {} --tokenizer {} -t 0 -n 200", stories("stories260K.bin"), stories("tok512.bin"));
  const test::CliRun out = mpirun("-np 2 {cli} " + generate, "2>/dev/null");
  EXPECT_EQ(out.status, 0) << out.out;
  EXPECT_EQ(out.out, test::read_bytes(stories("expected_greedy_t0_n200.txt")));  // once: rank 0 alone prints
  const test::CliRun err = mpirun("-np 2 {cli} " + generate, "2>&1 >/dev/null");
  EXPECT_NE(err.out.find("rank 0: read 509.2 KiB"), std::string::npos) << err.out;
  EXPECT_NE(err.out.find("rank 1: read 509.2 KiB"), std::string::npos) << err.out;
}

TEST(CliMpi, ARankWithoutItsFileStopsTheJobWithOneErrorNamingIt) {
  WL_REQUIRE_TESTDATA();
  WL_REQUIRE_MPIRUN();
  const std::string missing = "/nonexistent/rank1.bin";
  const test::CliRun r = mpirun(fmt::format("-np 1 {{cli}} generate --model {0} -n 4 : -np 1 {{cli}} generate --model {1} -n 4",
                                            stories("stories260K.bin"), missing),
                                "2>&1");
  EXPECT_NE(r.status, 0) << r.out;
  const std::string error = "weightloader: error: rank 1 of 2 failed opening the checkpoint: " + missing + ": no such file";
  const size_t at = r.out.find(error);
  EXPECT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(error, at + 1), std::string::npos) << "printed once, by rank 0: " << r.out;
}

}  // namespace
}  // namespace wl
