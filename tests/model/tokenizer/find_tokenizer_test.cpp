// Opening tokenizers by content and finding the one that goes with a model.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/tokenizer/byte_level_test_util.hpp"
#include "model/tokenizer/tokenizer_test_util.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

void small_llama2c(const std::string& path, int32_t max_len_pad = 0) {
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>", " ", "a"};
  if (max_len_pad) pieces.push_back(std::string(max_len_pad, 'x'));
  test::write_llama2c_tokenizer(path, pieces, std::vector<float>(pieces.size(), 0.0f));
}

TEST(FindTokenizer, OpensByContentNotName) {
  test::TempDir dir;
  small_llama2c(dir.file("tokenizer.model"));  // a llama2.c file, whatever its name
  EXPECT_EQ(open_tokenizer(dir.file("tokenizer.model"))->kind(), "llama2c");
  // max_token_length 10 starts with byte 0x0A, as a SentencePiece model does: still llama2.c.
  small_llama2c(dir.file("ten.bin"), 10);
  EXPECT_EQ(open_tokenizer(dir.file("ten.bin"))->vocab_size(), 6u);
  test::write_bytes(dir.file("junk.model"), std::string("\x0A\x05garbage-garbage", 17));
  const std::string msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(dir.file("junk.model")); });
  EXPECT_NE(msg.find("neither a SentencePiece model"), std::string::npos) << msg;
  // A GGUF checkpoint without tokenizer metadata.
  test::write_gguf_metadata(dir.file("m.gguf"), {{"general.architecture", std::string("llama")}});
  test::expect_error(ErrorCode::TokenizerUnsupported, [&] { open_tokenizer(dir.file("m.gguf")); });
  test::expect_error(ErrorCode::InvalidArgument, [&] { open_tokenizer(dir.path().string()); });
}

TEST(FindTokenizer, DirectoryRules) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  EXPECT_EQ(find_tokenizer(d), nullptr);
  EXPECT_EQ(find_tokenizer_path(d), "");
  // A GGUF file that embeds a tokenizer, and one that does not (sorted first).
  test::write_gguf_metadata(dir.file("a.gguf"), {{"general.architecture", std::string("llama")}});
  small_llama2c(dir.file("x"));
  test::write_gguf_metadata(dir.file("b.gguf"), tokenizer_gguf_metadata(dir.file("x")));
  fs::remove(dir.file("x"));
  EXPECT_EQ(find_tokenizer_path(d), dir.file("b.gguf"));
  EXPECT_EQ(find_tokenizer(d)->kind(), "gguf");
  small_llama2c(dir.file("tokenizer.bin"));
  EXPECT_EQ(find_tokenizer_path(d), dir.file("tokenizer.bin"));
  test::write_tokenizer_json(dir, test::tiny_tokenizer_json());  // Llama 3's and Qwen2's
  EXPECT_EQ(find_tokenizer_path(d), dir.file("tokenizer.json"));
  EXPECT_EQ(find_tokenizer(d)->kind(), "tokenizer.json");
  small_llama2c(dir.file("tokenizer.model"));  // a Llama 2 folder holds both: SentencePiece's model first
  EXPECT_EQ(find_tokenizer_path(d), dir.file("tokenizer.model"));
}

TEST(FindTokenizer, FileRules) {
  test::TempDir dir;
  test::write_bytes(dir.file("model.bin"), "weights");
  EXPECT_EQ(find_tokenizer(dir.file("model.bin")), nullptr);
  EXPECT_EQ(find_tokenizer(dir.file("missing.bin")), nullptr);
  small_llama2c(dir.file("tok512.bin"));
  EXPECT_EQ(find_tokenizer_path(dir.file("model.bin")), dir.file("tok512.bin"));
  small_llama2c(dir.file("tokenizer.bin"));
  EXPECT_EQ(find_tokenizer_path(dir.file("model.bin")), dir.file("tokenizer.bin"));
  test::write_tokenizer_json(dir, test::tiny_tokenizer_json());
  EXPECT_EQ(find_tokenizer_path(dir.file("model.bin")), dir.file("tokenizer.json"));
  small_llama2c(dir.file("tokenizer.model"));
  EXPECT_EQ(find_tokenizer_path(dir.file("model.bin")), dir.file("tokenizer.model"));
  // A GGUF file that embeds one is its own tokenizer, whatever lies beside it.
  test::write_gguf_metadata(dir.file("m.gguf"), tokenizer_gguf_metadata(dir.file("tok512.bin")));
  EXPECT_EQ(find_tokenizer_path(dir.file("m.gguf")), dir.file("m.gguf"));
  test::write_gguf_metadata(dir.file("plain.gguf"), {{"general.architecture", std::string("llama")}});
  EXPECT_EQ(find_tokenizer_path(dir.file("plain.gguf")), dir.file("tokenizer.model"));
}

TEST(FindTokenizer, Stories260KFindsTok512) {
  WL_REQUIRE_TESTDATA();
  const fs::path d = test::testdata_dir() / "llama2c-stories260K";
  const auto tok = find_tokenizer((d / "stories260K.bin").string());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), "llama2c");
  EXPECT_EQ(find_tokenizer_path((d / "stories260K.bin").string()), (d / "tok512.bin").string());
  EXPECT_EQ(find_tokenizer_path(d.string()), "");  // a directory looks for tokenizer.model / tokenizer.json / tokenizer.bin only
}

}  // namespace
}  // namespace wl
