// The hostile-input matrix: every case of hostile_files.hpp, written to disk by the first test that
// needs it, opened and loaded as `--loader auto` does, fails with its own error code and a message
// naming the file (and tensor or key).
#include <gtest/gtest.h>

#include "hostile/hostile_files.hpp"
#include "hostile/hostile_util.hpp"

namespace wl::test {
namespace {

const std::vector<HostileFile>& files() {
  static const TempDir dir;
  static const std::vector<HostileFile> list = write_hostile_files(dir);
  return list;
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const HostileCase& c : hostile_cases()) out.push_back(c.name);
  return out;
}

class HostileMatrix : public testing::TestWithParam<std::string> {};

TEST_P(HostileMatrix, FailsWithItsCodeNamingTheFile) {
  for (const HostileFile& f : files()) {
    if (std::filesystem::path(f.path).filename() != GetParam()) continue;
    const std::string message = expect_error(f.code, [&] { load_auto(f.path); });
    EXPECT_NE(message.find(f.path), std::string::npos) << message;
    EXPECT_NE(message.find(f.named), std::string::npos) << message;
    return;
  }
  FAIL() << "no hostile file " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Hostile, HostileMatrix, testing::ValuesIn(names()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

// The CLI reports each of them as an error naming the file, with exit status 1.
TEST(HostileCli, EveryFileIsAnErrorNamingItWithStatus1) {
  for (const HostileFile& f : files()) {
    const CliResult r = run_shell("exec \"$WL\" inspect \"" + f.path + "\"");
    EXPECT_EQ(r.status, 1) << f.path << ": " << r.out;
    EXPECT_NE(r.out.find(f.path), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("[") + std::string(error_code_name(f.code)) + "]"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace wl::test
