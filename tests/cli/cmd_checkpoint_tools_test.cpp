// The checkpoint tools as a user runs them: convert by extension, diff, verify, --version,
// inspect --json; exit statuses and machine-readable output.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "cli/cli_run.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

using test::cli;
using test::cli_stdout;
using test::CliRun;

TEST(CliTools, VersionIsTheProjectVersion) {
  CliRun r = cli("--version");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(r.out.starts_with("weightloader 0.")) << r.out;
  EXPECT_NE(r.out.find('.', 14), std::string::npos) << r.out;  // major.minor.patch
}

TEST(CliTools, HelpOnTheNewCommands) {
  for (const char* c : {"diff", "verify"}) {
    CliRun r = cli(std::string(c) + " --help");
    EXPECT_EQ(r.status, 0) << c;
    EXPECT_NE(r.out.find("exit status"), std::string::npos) << c << ": " << r.out;
  }
}

TEST(CliTools, InspectJsonHoldsEverythingInspectPrints) {
  test::TempDir dir;
  ASSERT_EQ(cli("synth " + dir.file("m") + " --preset tiny").status, 0);
  CliRun r = cli_stdout("inspect " + dir.file("m") + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "safetensors");
  EXPECT_TRUE(j["metadata"].contains("config.json"));
  uint64_t bytes = 0, params = 0;
  for (const auto& t : j["tensors"]) {
    for (const char* key : {"name", "dtype", "shape", "file", "offset", "nbytes"}) EXPECT_TRUE(t.contains(key)) << key;
    bytes += t["nbytes"].get<uint64_t>();
    uint64_t n = 1;
    for (const auto& d : t["shape"]) n *= d.get<uint64_t>();
    params += n;
  }
  EXPECT_EQ(j["total_bytes"].get<uint64_t>(), bytes);
  EXPECT_EQ(j["total_parameters"].get<uint64_t>(), params);
}

TEST(CliTools, ConvertDiffVerify) {
  test::TempDir dir;
  const std::string m = dir.file("m");
  ASSERT_EQ(cli("synth " + m + " --preset tiny").status, 0);
  ASSERT_EQ(cli("convert " + m + " " + dir.file("one.safetensors")).status, 0);
  ASSERT_EQ(cli("convert " + m + " " + dir.file("m.gguf") + " --gguf-type f32").status, 0);
  ASSERT_EQ(cli("convert " + m + " " + dir.file("q8.gguf") + " --gguf-type q8_0").status, 0);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.file("one.safetensors")));

  CliRun same = cli_stdout("diff " + m + " " + dir.file("m.gguf") + " --json");
  EXPECT_EQ(same.status, 0) << same.out;
  const auto j = nlohmann::json::parse(same.out);
  EXPECT_TRUE(j["matches"].get<bool>());
  EXPECT_EQ(j["summary"]["equal_bits"], 21);

  CliRun q8 = cli("diff " + dir.file("q8.gguf") + " " + m);
  EXPECT_EQ(q8.status, 1) << q8.out;  // the quantisation error
  EXPECT_NE(q8.out.find("DIFFERS"), std::string::npos) << q8.out;
  EXPECT_EQ(cli("diff " + dir.file("q8.gguf") + " " + m + " --atol 0.01 --rtol 0.01").status, 0);
  CliRun renamed = cli("diff " + m + " " + dir.file("one.safetensors") + " --kw strip_prefix=model.");
  EXPECT_EQ(renamed.status, 0) << renamed.out;  // the same mapping on both sides

  CliRun missing = cli("diff " + m + " " + dir.file("absent"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("FileNotFound"), std::string::npos) << missing.out;

  CliRun ok = cli_stdout("verify " + dir.file("q8.gguf") + " --json");
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_TRUE(nlohmann::json::parse(ok.out)["ok"].get<bool>());

  TensorView t = TensorView::empty(DType::F32, {4});
  for (int i = 0; i < 4; ++i) t.data<float>()[i] = i == 2 ? NAN : 1.0f;
  write_safetensors(dir.file("nan.safetensors"), {{"w", t}});
  CliRun bad = cli("verify " + dir.file("nan.safetensors"));
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("1 NaN"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace wl
