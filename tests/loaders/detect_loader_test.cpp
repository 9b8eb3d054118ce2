// detect_loader: the built-in loader and kwargs that fit a path, by content.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TEST(DetectLoader, AModelBesideItsTokenizerUnderOneExtensionReadsOnlyTheModelsFormat) {
  WL_REQUIRE_TESTDATA();
  // stories260K.bin (llama2.c) beside tok512.bin (its tokenizer, no weights format): both *.bin.
  const std::string dir = (test::testdata_dir() / "llama2c-stories260K").string();
  const LoaderChoice choice = detect_loader(dir);
  EXPECT_EQ(choice.name, "local");
  EXPECT_EQ(choice.kwargs.at("file_pattern"), KwValue(std::string("*.bin")));
  EXPECT_EQ(choice.kwargs.at("format"), KwValue(std::string("llama2c")));
  auto source = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs)->get_weights(dir);
  EXPECT_EQ(source->format(), "llama2c");
  EXPECT_FALSE(source->tensors().empty());
  // Without the format the tokenizer is one of the files to read, and no format recognises it.
  test::expect_error(ErrorCode::UnknownFormat, [&] {
    WeightLoaderRegistry::with_builtins()->create("local", {{"file_pattern", std::string("*.bin")}})->get_weights(dir);
  });
}

TEST(DetectLoader, FilesOfOneFormatNeedNoFormatKwarg) {
  WL_REQUIRE_TESTDATA();
  const LoaderChoice choice = detect_loader((test::testdata_dir() / "pytorch-zip").string());
  EXPECT_EQ(choice.name, "local");
  EXPECT_EQ(choice.kwargs.count("format"), 0u);
}

}  // namespace
}  // namespace wl
