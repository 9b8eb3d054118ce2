// `weightloader tokenize`, and `weightloader convert` embedding the tokenizer in GGUF output.
#include <gtest/gtest.h>

#include "model/tokenizer/tokenizer_test_util.hpp"
#include "test_util.hpp"
#include "cli/cli_run.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

using test::cli;
using test::cli_stdout;

std::string stories(const std::string& file) { return (test::testdata_dir() / "llama2c-stories260K" / file).string(); }

TEST(CliTokenize, EncodesAndDecodes) {
  WL_REQUIRE_TESTDATA();
  const std::string tok = " --tokenizer " + stories("tok512.bin");
  test::CliRun ids = cli_stdout("tokenize" + tok + " --text 'Once upon a time, Lily smiled.'");
  ASSERT_EQ(ids.status, 0) << ids.out;
  EXPECT_EQ(ids.out.substr(0, 2), "1,");
  test::CliRun text = cli_stdout("tokenize" + tok + " --ids " + ids.out);
  EXPECT_EQ(text.out, "Once upon a time, Lily smiled.\n");
  EXPECT_EQ(cli_stdout("tokenize" + tok + " --ids 1,403,407,261").out, "Once upon a\n");
  EXPECT_EQ(cli_stdout("tokenize" + tok + " --text hi").out, "1," + cli_stdout("tokenize" + tok + " --text hi --no-bos").out);
  test::CliRun bad = cli("tokenize" + tok + " --ids 1,x");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("'x' is not a token id"), std::string::npos) << bad.out;
  EXPECT_EQ(cli("tokenize" + tok).status, 1);
  test::CliRun out_of_range = cli("tokenize" + tok + " --ids 512");
  EXPECT_EQ(out_of_range.status, 1);
  EXPECT_NE(out_of_range.out.find("TokenOutOfRange"), std::string::npos) << out_of_range.out;
}

TEST(CliTokenize, ConvertEmbedsTheTokenizerFoundBesideTheModel) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  test::CliRun conv = cli("convert " + stories("stories260K.bin") + " " + dir.file("m.gguf") + " --to gguf");
  ASSERT_EQ(conv.status, 0) << conv.out;
  EXPECT_NE(conv.out.find("embedded the tokenizer of " + stories("tok512.bin")), std::string::npos) << conv.out;
  const auto l2c = open_tokenizer(stories("tok512.bin"));
  const auto gguf = find_tokenizer(dir.file("m.gguf"));
  ASSERT_NE(gguf, nullptr);
  EXPECT_EQ(gguf->kind(), "gguf");
  const std::string text = "Lily's mom said, \"Lily, let's go to the park.\"";
  EXPECT_EQ(gguf->encode(text, true), l2c->encode(text, true));
  // The embedded tokenizer travels on through GGUF -> GGUF.
  ASSERT_EQ(cli("convert " + dir.file("m.gguf") + " " + dir.file("again.gguf") + " --to gguf").status, 0);
  EXPECT_EQ(open_tokenizer(dir.file("again.gguf"))->encode(text, true), l2c->encode(text, true));

  ASSERT_EQ(cli("convert " + stories("stories260K.bin") + " " + dir.file("bare.gguf") + " --to gguf --no-tokenizer").status, 0);
  EXPECT_EQ(find_tokenizer_path(dir.file("bare.gguf")), "");
  test::write_llama2c_tokenizer(dir.file("small.bin"), {"<unk>", "<s>", "</s>", "a"}, {0, 0, 0, 0});
  test::CliRun mismatch =
      cli("convert " + stories("stories260K.bin") + " " + dir.file("x.gguf") + " --to gguf --tokenizer " + dir.file("small.bin"));
  EXPECT_EQ(mismatch.status, 1);
  EXPECT_NE(mismatch.out.find("the tokenizer has 4 tokens but the model's embedding 512 rows"), std::string::npos)
      << mismatch.out;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
}

}  // namespace
}  // namespace wl
