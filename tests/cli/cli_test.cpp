// The `weightloader` command as a user runs it: exit codes, stdout, stderr.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "cli/cli_run.hpp"

namespace wl {
namespace {

using test::cli;
using test::cli_stdout;
using test::CliRun;

TEST(Cli, HelpOnEveryCommand) {
  for (const char* c : {"", "inspect", "load", "loaders", "synth", "convert", "generate"}) {
    CliRun r = cli(std::string(c) + " --help");
    EXPECT_EQ(r.status, 0) << c << ": " << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << c;
  }
  EXPECT_NE(cli("").status, 0);  // a subcommand is required
}

TEST(Cli, SynthInspectLoadRoundTrip) {
  test::TempDir dir;
  const std::string m = dir.file("m");
  ASSERT_EQ(cli("synth " + m + " --preset tiny --shards 2").status, 0);
  CliRun inspect = cli_stdout("inspect " + m + " --json");
  ASSERT_EQ(inspect.status, 0) << inspect.out;
  const auto j = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(j["format"], "safetensors");
  EXPECT_EQ(j["total_tensors"], 21);
  EXPECT_EQ(j["tensors"][0]["name"], "model.embed_tokens.weight");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({512, 64}));

  CliRun load = cli_stdout("load " + m + " --dtype bf16 --json");
  ASSERT_EQ(load.status, 0) << load.out;
  const auto r = nlohmann::json::parse(load.out);
  EXPECT_EQ(r["loaded"].size(), 21u);
  EXPECT_EQ(r["converted"].size(), 21u);
  EXPECT_EQ(r["bytes_read"], 2 * r["bytes_written"].get<uint64_t>());
  EXPECT_GT(r["peak_rss_bytes"].get<uint64_t>(), 0u);

  CliRun text = cli("load " + m + " --kw strip_prefix=model. --kw concurrency=1");
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("loaded      21 tensors"), std::string::npos) << text.out;
}

TEST(Cli, CustomBinaryIsFoundByContent) {
  test::TempDir dir;
  const std::string m = dir.file("cb");
  ASSERT_EQ(cli("synth " + m + " --preset tiny --format custom_binary").status, 0);
  CliRun r = cli("inspect " + m);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("loader custom_binary"), std::string::npos) << r.out;
}

TEST(Cli, LoadersListsTheBuiltins) {
  CliRun r = cli("loaders -v");
  EXPECT_EQ(r.status, 0);
  for (const char* name : {"local", "custom_binary", "hf", "file_pattern", "strip_prefix"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

TEST(Cli, ErrorsAreMessagesWithNonZeroStatus) {
  test::TempDir dir;
  CliRun missing = cli("inspect " + dir.file("absent"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("FileNotFound"), std::string::npos) << missing.out;

  CliRun unknown = cli("load " + dir.path().string() + " --loader nope");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.out.find("available: "), std::string::npos) << unknown.out;

  ASSERT_EQ(cli("synth " + dir.file("m") + " --preset tiny").status, 0);
  CliRun badkw = cli("load " + dir.file("m") + " --kw colour=red");
  EXPECT_EQ(badkw.status, 1);
  EXPECT_NE(badkw.out.find("accepted:"), std::string::npos) << badkw.out;

  CliRun notkv = cli("load " + dir.file("m") + " --kw novalue");
  EXPECT_EQ(notkv.status, 1);

  test::write_bytes(dir.file("junk.safetensors"), "this is not a checkpoint at all");
  CliRun junk = cli("inspect " + dir.file("junk.safetensors"));
  EXPECT_EQ(junk.status, 1);
  EXPECT_NE(junk.out.find("junk.safetensors"), std::string::npos) << junk.out;

  CliRun badpreset = cli("synth " + dir.file("x") + " --preset huge");
  EXPECT_EQ(badpreset.status, 1);
  EXPECT_NE(badpreset.out.find("presets: tiny"), std::string::npos);
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

TEST(Cli, AutoFindsTheFormatOfAnyDirectoryOrFile) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  const std::string st = dir.file("st"), gg = dir.file("gg");
  ASSERT_EQ(cli("synth " + st + " --preset tiny").status, 0);
  std::filesystem::create_directories(gg);
  ASSERT_EQ(cli("convert " + st + " " + gg + "/m.gguf --to gguf --gguf-type q8_0").status, 0);
  CliRun g = cli("load " + gg + " --dtype f32");  // a directory of GGUF files, no loader named
  EXPECT_EQ(g.status, 0) << g.out;
  EXPECT_NE(g.out.find("Q8_0->F32"), std::string::npos) << g.out;
  CliRun h = cli("inspect " + st);
  EXPECT_NE(h.out.find("loader hf"), std::string::npos) << h.out;
  const std::string pt = (test::testdata_dir() / "pytorch-zip").string();
  CliRun p = cli("inspect " + pt + "/candle_test.pt");
  EXPECT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("format pytorch"), std::string::npos) << p.out;
  CliRun notckpt = cli("inspect " + (test::testdata_dir() / "llama2c-stories260K" / "tok512.bin").string());
  EXPECT_EQ(notckpt.status, 1);
  EXPECT_NE(notckpt.out.find("tried: safetensors, pytorch, gguf, llama2c"), std::string::npos) << notckpt.out;
}

}  // namespace
}  // namespace wl
