// llama2.c tokenizer files: run.c's encode and decode, on the real stories260K tokenizer and on small
// hand-made vocabularies; strict validation.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model/tokenizer/tokenizer_test_util.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

std::string tok512() { return (test::testdata_dir() / "llama2c-stories260K" / "tok512.bin").string(); }

// <unk>, BOS, EOS, the 256 byte tokens, then `extra`.
std::vector<std::string> vocab_with(const std::vector<std::string>& extra) {
  std::vector<std::string> v = {"<unk>", "\n<s>\n", "\n</s>\n"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.push_back(buf);
  }
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

TEST(Llama2cTokenizer, Stories260KDecodesTheReferenceGeneration) {
  WL_REQUIRE_TESTDATA();
  const auto tok = open_tokenizer(tok512());
  EXPECT_EQ(tok->kind(), "llama2c");
  EXPECT_EQ(tok->vocab_size(), 512u);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  // The first tokens run.c generated (expected_logits_first4.txt) print the start of its output.
  const std::string expected = test::read_bytes(
      (test::testdata_dir() / "llama2c-stories260K" / "expected_greedy_t0_n200.txt").string());
  const std::string start = test::decode_all(*tok, {1, 403, 407, 261});
  EXPECT_EQ(start, expected.substr(0, start.size()));
  EXPECT_EQ(start, "Once upon a");
  // The whole reference text encodes into ids that print it back, as run.c encodes them.
  const std::string text = expected.substr(0, expected.find_last_not_of('\n') + 1);
  const std::vector<int32_t> ids = tok->encode(text, true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(test::decode_all(*tok, ids), text);
  EXPECT_LT(ids.size(), text.size() / 2);  // merged, not byte by byte
}

TEST(Llama2cTokenizer, Stories260KEncodesAsRunC) {
  WL_REQUIRE_TESTDATA();
  const auto tok = open_tokenizer(tok512());
  // The pieces and scores, read as run.c reads them.
  std::vector<std::string> vocab(512);
  std::vector<float> scores(512);
  const std::string bytes = test::read_bytes(tok512());
  size_t pos = 4;
  for (int32_t i = 0; i < 512; ++i) {
    int32_t len;
    std::memcpy(&scores[i], bytes.data() + pos, 4);
    std::memcpy(&len, bytes.data() + pos + 4, 4);
    vocab[i] = bytes.substr(pos + 8, len);
    pos += 8 + len;
  }
  for (const std::string& s : test::tokenizer_test_strings()) {
    EXPECT_EQ(tok->encode(s, true), test::run_c_encode(vocab, scores, s, true)) << s;
    EXPECT_EQ(tok->encode(s, false), test::run_c_encode(vocab, scores, s, false)) << s;
    EXPECT_EQ(test::decode_all(*tok, tok->encode(s, true)), s) << s;
  }
}

TEST(Llama2cTokenizer, MergesTheBestScoringPairFirstAndTheLeftmostOnTies) {
  test::TempDir dir;
  // " ab" could merge as " a"+"b" or " "+"ab": "ab" scores higher.
  auto v = vocab_with({" ", "a", "b", "c", " a", "ab", " ab", "bc"});
  std::vector<float> s(v.size(), 0.0f);
  auto id = [&](const std::string& p) { return static_cast<int32_t>(std::find(v.begin(), v.end(), p) - v.begin()); };
  s[id(" a")] = -5, s[id("ab")] = -1, s[id(" ab")] = -2, s[id("bc")] = -1;
  test::write_llama2c_tokenizer(dir.file("t.bin"), v, s);
  const auto tok = open_tokenizer(dir.file("t.bin"));
  EXPECT_EQ(tok->encode("ab", true), (std::vector<int32_t>{1, id(" ab")}));
  // "abc": "ab" and "bc" tie at -1: the leftmost merges, then " "+"ab" -> " ab", leaving "c".
  EXPECT_EQ(tok->encode("abc", false), (std::vector<int32_t>{id(" ab"), id("c")}));
  EXPECT_EQ(tok->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_TRUE(tok->encode("", false).empty());
  // Bytes outside the vocabulary fall back to byte + 3; a known code point does not.
  EXPECT_EQ(tok->encode("a\n\xC3\xA9", false), (std::vector<int32_t>{id(" a"), '\n' + 3, 0xC3 + 3, 0xA9 + 3}));
}

TEST(Llama2cTokenizer, DecodesAsRunC) {
  test::TempDir dir;
  auto v = vocab_with({" hello", "world", "\xC3\xA9"});
  test::write_llama2c_tokenizer(dir.file("t.bin"), v, std::vector<float>(v.size(), 0.0f));
  const auto tok = open_tokenizer(dir.file("t.bin"));
  const int32_t hello = 259, world = 260, e = 261;
  EXPECT_EQ(tok->decode(1, hello), "hello");  // the leading space goes right after BOS
  EXPECT_EQ(tok->decode(world, hello), " hello");
  EXPECT_EQ(tok->decode(hello, world), "world");
  EXPECT_EQ(tok->decode(hello, e), "\xC3\xA9");
  EXPECT_EQ(tok->decode(hello, 'A' + 3), "A");  // "<0x41>"
  EXPECT_EQ(tok->decode(hello, 0xE2 + 3), "\xE2");
  EXPECT_EQ(tok->decode(hello, 2), "\n</s>\n");  // what run.c would print
  test::expect_error(ErrorCode::TokenOutOfRange, [&] { tok->decode(1, 262); });
  test::expect_error(ErrorCode::TokenOutOfRange, [&] { tok->decode(1, -1); });
}

TEST(Llama2cTokenizer, ByteWithoutFallbackTokenIsAnError) {
  test::TempDir dir;
  test::write_llama2c_tokenizer(dir.file("t.bin"), {"<unk>", "<s>", "</s>", " ", "a"}, {0, 0, 0, 0, 0});
  const auto tok = open_tokenizer(dir.file("t.bin"));
  EXPECT_EQ(tok->encode("a", false), (std::vector<int32_t>{3, 4}));
  const std::string msg = test::expect_error(ErrorCode::TokenOutOfRange, [&] { tok->encode("b", false); });
  EXPECT_NE(msg.find("0x62"), std::string::npos) << msg;
}

TEST(Llama2cTokenizer, RejectsMalformedFilesNamingTheToken) {
  test::TempDir dir;
  const std::string f = dir.file("t.bin");
  test::write_llama2c_tokenizer(f, {"<unk>", "<s>", "</s>", "abc"}, {0, 0, 0, 0});
  const std::string good = test::read_bytes(f);
  auto with = [&](const std::string& bytes) {
    test::write_bytes(f, bytes);
    return f;
  };
  auto patch_i32 = [&](size_t offset, int32_t value) {
    std::string b = good;
    std::memcpy(b.data() + offset, &value, 4);
    return b;
  };
  // Token 3 (score, length, bytes) starts after max_token_length and "<unk>", "<s>", "</s>".
  const size_t t3 = 4 + 8 + 5 + 8 + 3 + 8 + 4;
  std::string msg = test::expect_error(ErrorCode::Truncated, [&] { open_tokenizer(with(good.substr(0, good.size() - 1))); });
  EXPECT_NE(msg.find("token 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find(f), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::Truncated, [&] { open_tokenizer(with(good.substr(0, t3 + 6))); });
  EXPECT_NE(msg.find("length of token 3"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(with(patch_i32(t3 + 4, -1))); });
  EXPECT_NE(msg.find("token 3 has length -1"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(with(patch_i32(t3 + 4, 2000000000))); });
  EXPECT_NE(msg.find("token 3 has length 2000000000"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(with(patch_i32(0, 0))); });
  EXPECT_NE(msg.find("max_token_length"), std::string::npos) << msg;
  const float nan = std::nanf("");
  std::string b = good;
  std::memcpy(b.data() + t3, &nan, 4);
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(with(b)); });
  EXPECT_NE(msg.find("token 3"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(with(good.substr(0, t3 - 12))); });
  EXPECT_NE(msg.find("at least"), std::string::npos) << msg;
  test::expect_error(ErrorCode::Truncated, [&] { open_tokenizer(with("")); });
  // A huge file is refused before it is read (sparse: no disk used).
  with(good);
  std::filesystem::resize_file(f, (64ull << 20) + 1);
  test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(f); });
  test::expect_error(ErrorCode::FileNotFound, [&] { open_tokenizer(dir.file("missing.bin")); });
  // Found by fuzz_tokenizer: a length allowed by a huge max_token_length but beyond the file's end
  // is Truncated before anything of that size is allocated.
  std::string huge = patch_i32(0, 2000000000);
  std::memcpy(huge.data() + t3 + 4, "\x00\x00\x00\x60", 4);  // 1.6 GB
  msg = test::expect_error(ErrorCode::Truncated, [&] { open_tokenizer(with(huge)); });
  EXPECT_NE(msg.find("token 3"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl
