// The tokenizer embedded in GGUF files (tokenizer.ggml.*): the stories260K tokenizer carried into
// GGUF gives llama2.c's ids and text; SentencePiece-style rules; strict metadata checks.
#include <gtest/gtest.h>

#include "model/tokenizer/byte_level_test_util.hpp"
#include "model/tokenizer/tokenizer_test_util.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

std::string tok512() { return (test::testdata_dir() / "llama2c-stories260K" / "tok512.bin").string(); }

TEST(GgufTokenizer, Stories260KInGgufMatchesTheLlama2cTokenizer) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  const GgufMetadata meta = tokenizer_gguf_metadata(tok512());
  const auto& pieces = *std::get<GgufArray>(meta.at("tokenizer.ggml.tokens")).get<std::string>();
  EXPECT_EQ(pieces[1], "<s>");
  EXPECT_EQ(pieces[3], "<0x00>");
  const auto& types = *std::get<GgufArray>(meta.at("tokenizer.ggml.token_type")).get<int32_t>();
  EXPECT_EQ((std::vector<int32_t>(types.begin(), types.begin() + 4)), (std::vector<int32_t>{2, 3, 3, 6}));
  EXPECT_EQ(types[300], 1);
  test::write_gguf_metadata(dir.file("tok.gguf"), meta);

  const auto l2c = open_tokenizer(tok512());
  const auto gguf = open_tokenizer(dir.file("tok.gguf"));
  EXPECT_EQ(gguf->kind(), "gguf");
  EXPECT_EQ(gguf->vocab_size(), 512u);
  EXPECT_EQ(gguf->bos_id(), 1);
  EXPECT_EQ(gguf->eos_id(), 2);
  for (const std::string& s : test::tokenizer_test_strings()) {
    const std::vector<int32_t> ids = l2c->encode(s, true);
    EXPECT_EQ(gguf->encode(s, true), ids) << s;
    EXPECT_EQ(gguf->encode(s, false), l2c->encode(s, false)) << s;
    EXPECT_EQ(test::decode_all(*gguf, ids), test::decode_all(*l2c, ids)) << s;
  }
  for (int32_t t = 3; t < 512; ++t)  // every token but <unk>, BOS, EOS (which print differently)
    for (int32_t prev : {1, 2, 300}) EXPECT_EQ(gguf->decode(prev, t), l2c->decode(prev, t)) << t;
  EXPECT_EQ(gguf->decode(5, 1), "");  // control tokens print nothing
}

// <unk>, <s>, </s> and `extra` normal pieces with their scores; no byte tokens unless given.
GgufMetadata vocab_metadata(const std::vector<std::pair<std::string, float>>& extra, std::vector<int32_t> extra_types = {}) {
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (size_t i = 0; i < extra.size(); ++i) {
    pieces.push_back(extra[i].first);
    scores.push_back(extra[i].second);
    types.push_back(i < extra_types.size() ? extra_types[i] : 1);
  }
  return {{"tokenizer.ggml.model", std::string("llama")},
          {"tokenizer.ggml.tokens", GgufArray{pieces}},
          {"tokenizer.ggml.scores", GgufArray{scores}},
          {"tokenizer.ggml.token_type", GgufArray{types}},
          {"tokenizer.ggml.bos_token_id", uint32_t(1)},
          {"tokenizer.ggml.eos_token_id", uint32_t(2)},
          {"tokenizer.ggml.unknown_token_id", uint32_t(0)}};
}

TEST(GgufTokenizer, SentencePieceRules) {
  test::TempDir dir;
  // 3 ▁, 4 a, 5 b, 6 ▁a, 7 ▁b, 8 <0x0A> (byte), 9 ab (unused: still merges, as in SentencePiece)
  GgufMetadata meta = vocab_metadata({{"\xE2\x96\x81", 0}, {"a", 0}, {"b", 0}, {"\xE2\x96\x81" "a", -1},
                                      {"\xE2\x96\x81" "b", -2}, {"<0x0A>", 0}, {"ab", -3}},
                                     {1, 1, 1, 1, 1, 6, 5});
  test::write_gguf_metadata(dir.file("t.gguf"), meta);
  const auto tok = open_tokenizer(dir.file("t.gguf"));
  EXPECT_EQ(tok->encode("a b", true), (std::vector<int32_t>{1, 6, 7}));
  EXPECT_EQ(tok->encode("bab", false), (std::vector<int32_t>{7, 9}));
  // No byte token for a character: one <unk>, and a run of unknown characters is one <unk>.
  EXPECT_EQ(tok->encode("a\nxy\xC3\xA9 a", false), (std::vector<int32_t>{6, 8, 0, 6}));
  EXPECT_EQ(tok->decode(1, 6), "a");
  EXPECT_EQ(tok->decode(6, 7), " b");
  EXPECT_EQ(tok->decode(6, 8), "\n");
  EXPECT_EQ(tok->decode(6, 0), " \xE2\x81\x87 ");
  test::expect_error(ErrorCode::TokenOutOfRange, [&] { tok->decode(1, 10); });

  meta["tokenizer.ggml.add_space_prefix"] = false;
  test::write_gguf_metadata(dir.file("nospace.gguf"), meta);
  EXPECT_EQ(open_tokenizer(dir.file("nospace.gguf"))->encode("a b", false), (std::vector<int32_t>{4, 7}));
}

TEST(GgufTokenizer, RejectsBadMetadataNamingTheField) {
  test::TempDir dir;
  const std::string f = dir.file("t.gguf");
  auto open_with = [&](const GgufMetadata& m) {
    test::write_gguf_metadata(f, m);
    return open_tokenizer(f);
  };
  auto changed = [](std::string key, GgufValue value) {
    GgufMetadata m = vocab_metadata({{"a", 0}});
    m[key] = std::move(value);
    return m;
  };
  std::string msg = test::expect_error(ErrorCode::TokenizerUnsupported,
                                       [&] { open_with(changed("tokenizer.ggml.model", std::string("bert"))); });
  EXPECT_NE(msg.find("tokenizer.ggml.model is 'bert'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(f), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerUnsupported, [&] { open_with({{"general.name", std::string("x")}}); });
  EXPECT_NE(msg.find("tokenizer.ggml.model is missing"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid,
                           [&] { open_with(changed("tokenizer.ggml.scores", GgufArray{std::vector<float>{0, 0}})); });
  EXPECT_NE(msg.find("tokenizer.ggml.scores has 2 elements for 4 tokens"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid,
                           [&] { open_with(changed("tokenizer.ggml.tokens", GgufArray{std::vector<int32_t>{1}})); });
  EXPECT_NE(msg.find("tokenizer.ggml.tokens is an array of INT32"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid,
                           [&] { open_with(changed("tokenizer.ggml.bos_token_id", uint32_t(4))); });
  EXPECT_NE(msg.find("tokenizer.ggml.bos_token_id is 4"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] {
    open_with(changed("tokenizer.ggml.token_type", GgufArray{std::vector<int32_t>{2, 3, 3, 7}}));
  });
  EXPECT_NE(msg.find("tokenizer.ggml.token_type[3] is 7"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::TokenizerInvalid,
                           [&] { open_with(changed("tokenizer.ggml.add_space_prefix", uint32_t(1))); });
  EXPECT_NE(msg.find("add_space_prefix"), std::string::npos) << msg;
  GgufMetadata no_tokens = vocab_metadata({});
  no_tokens.erase("tokenizer.ggml.tokens");
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_with(no_tokens); });
  EXPECT_NE(msg.find("tokenizer.ggml.tokens is missing"), std::string::npos) << msg;
}

// tokenizer.ggml.model "gpt2" as llama.cpp's converter writes it: the tiny byte-level vocabulary of
// byte_level_test_util.hpp, its merges as "left right", a control and a user-defined token.
GgufMetadata gpt2_metadata(const std::string& pre) {
  std::vector<std::string> tokens = test::kTinyPieces;
  tokens.insert(tokens.end(), {"<|begin_of_text|>", "<tool>"});
  std::vector<int32_t> types(tokens.size(), 1);
  types[33] = 3, types[34] = 4;
  std::vector<std::string> merges;
  for (const auto& m : test::tiny_merges()) merges.push_back(m.get<std::string>());
  return {{"tokenizer.ggml.model", std::string("gpt2")},
          {"tokenizer.ggml.pre", pre},
          {"tokenizer.ggml.tokens", GgufArray{tokens}},
          {"tokenizer.ggml.token_type", GgufArray{types}},
          {"tokenizer.ggml.merges", GgufArray{merges}},
          {"tokenizer.ggml.bos_token_id", uint32_t(33)},
          {"tokenizer.ggml.eos_token_id", uint32_t(33)}};
}

TEST(GgufTokenizer, Gpt2VocabularyByPreTokenizerName) {
  test::TempDir dir;
  auto open_meta = [&](const GgufMetadata& m) {
    test::write_gguf_metadata(dir.file("t.gguf"), m);
    return open_tokenizer(dir.file("t.gguf"));
  };
  const auto llama3 = open_meta(gpt2_metadata("llama-bpe"));
  EXPECT_EQ(llama3->kind(), "gguf");
  EXPECT_EQ(llama3->encode("12345", false), (std::vector<int32_t>{22, 23}));  // \p{N}{1,3}
  EXPECT_EQ(llama3->encode("ba", false), (std::vector<int32_t>{27}));         // llama.cpp sets ignore_merges for it
  EXPECT_EQ(llama3->encode("ab", true), (std::vector<int32_t>{33, 17}));      // and add_bos
  EXPECT_EQ(llama3->encode("<|begin_of_text|>it's<tool>", false), (std::vector<int32_t>{33, 13, 12, 25, 34}));
  EXPECT_EQ(llama3->decode(17, 34), "<tool>");
  EXPECT_EQ(open_meta(gpt2_metadata("llama3"))->encode("12345", false), llama3->encode("12345", false));  // an alias
  const auto qwen2 = open_meta(gpt2_metadata("qwen2"));
  EXPECT_EQ(qwen2->encode("12345", false), (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(qwen2->encode("ab", true), (std::vector<int32_t>{17}));  // no BOS by default
  EXPECT_EQ(qwen2->encode("ba", false), (std::vector<int32_t>{1, 0}));
  GgufMetadata bos = gpt2_metadata("qwen2");
  bos["tokenizer.ggml.add_bos_token"] = true;
  EXPECT_EQ(open_meta(bos)->encode("ab", true), (std::vector<int32_t>{33, 17}));
  EXPECT_EQ(open_meta(gpt2_metadata("gpt-2"))->encode("b it's", false), (std::vector<int32_t>{1, 3, 13, 12, 25}));
  EXPECT_EQ(qwen2->encode("e\xCC\x81", false), (std::vector<int32_t>{26}));  // NFC, as Qwen2's tokenizer.json
  // The other families' rules: digits one by one, in threes, or runs cut in threes (falcon); Llama 3's
  // regex without ignore_merges (dbrx, GLM-4).
  const std::vector<std::pair<std::string, std::vector<int32_t>>> digits = {
      {"deepseek-llm", {5, 6, 7, 8, 9}}, {"deepseek-coder", {5, 6, 7, 8, 9}}, {"starcoder", {5, 6, 7, 8, 9}},
      {"refact", {5, 6, 7, 8, 9}},       {"deepseek-v3", {22, 23}},           {"gpt-4o", {22, 23}},
      {"llama4", {22, 23}},              {"falcon", {22, 23}},                {"dbrx", {22, 23}}};
  for (const auto& [name, ids] : digits) EXPECT_EQ(open_meta(gpt2_metadata(name))->encode("12345", false), ids) << name;
  EXPECT_EQ(open_meta(gpt2_metadata("dbrx"))->encode("ba", false), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(open_meta(gpt2_metadata("glm4"))->encode("ab", true), (std::vector<int32_t>{17}));  // no BOS by default
}

TEST(GgufTokenizer, Gpt2RefusalsNameTheField) {
  test::TempDir dir;
  auto open_meta = [&](const GgufMetadata& m) {
    test::write_gguf_metadata(dir.file("t.gguf"), m);
    return open_tokenizer(dir.file("t.gguf"));
  };
  std::string msg = test::expect_error(ErrorCode::TokenizerUnsupported, [&] { open_meta(gpt2_metadata("tekken")); });
  EXPECT_NE(msg.find("tokenizer.ggml.pre is 'tekken'; the byte-level pre-tokenizers supported are gpt-2, llama-bpe, qwen2, dbrx, "
                     "gpt-4o, deepseek-llm, deepseek-coder, deepseek-v3, falcon, starcoder"),
            std::string::npos) << msg;
  GgufMetadata no_pre = gpt2_metadata("qwen2");
  no_pre.erase("tokenizer.ggml.pre");
  msg = test::expect_error(ErrorCode::TokenizerUnsupported, [&] { open_meta(no_pre); });
  EXPECT_NE(msg.find("tokenizer.ggml.pre is missing"), std::string::npos) << msg;
  GgufMetadata bad = gpt2_metadata("qwen2");
  bad["tokenizer.ggml.merges"] = GgufArray{std::vector<std::string>{"a b", "a x"}};
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_meta(bad); });
  EXPECT_NE(msg.find("tokenizer.ggml.merges[1] 'a x' names a piece that is no token ('x')"), std::string::npos) << msg;
  bad["tokenizer.ggml.merges"] = GgufArray{std::vector<std::string>{"c a"}};
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_meta(bad); });
  EXPECT_NE(msg.find("makes 'ca', which is no token"), std::string::npos) << msg;
  bad.erase("tokenizer.ggml.merges");
  msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_meta(bad); });
  EXPECT_NE(msg.find("tokenizer.ggml.merges is missing"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl
