// Reference checks against libsentencepiece: a small BPE model with byte fallback is trained at test
// time (Llama's settings: identity normalisation, spaces kept, digits split), exported as llama2.c's
// tokenizer.py exports it and as a GGUF tokenizer, and every tokenizer must give SentencePiece's ids
// and text.
#include <gtest/gtest.h>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <iostream>
#include <memory>

#include "model/tokenizer/tokenizer_test_util.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

// Training text: English with punctuation, digits, newlines and a few accented letters. Greek,
// Cyrillic, CJK and emoji in the test strings are outside it, so they take the byte fallback.
constexpr const char* kCorpus[] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
    "One day, she saw a big, red ball. She wanted to play with it, but it was too high.",
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do.",
    "The caf\xC3\xA9 opened at 7:30 and closed at 18:45; it sold 12 kinds of bread and 3 cakes.",
    "A na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 listed 2024 projects, 15 languages and 100% commitment!",
    "\u00DCber the hills and far away, the wind (cold, sharp) blew over 1,000 trees.",
    "Tom and Sue were friends. They liked to read books, draw pictures and sing songs together.",
    "\"Why is the sky blue?\" asked Ben. \"Because of the light,\" said his dad with a smile.",
    "In 1969, people walked on the moon. It took 3 days to get there and 8 days in all.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 -- and symbols: @ # $ & * + = / \\ | ~",
    "She said: it's fine; we're done... or are we? Yes! No? Maybe: [brackets] {braces} <angles>",
    "the the the a a a and and and to to to of of of in in in it it it was was was",
};

struct TrainedModel {
  test::TempDir dir;
  std::string model;    // tokenizer.model
  std::string llama2c;  // tokenizer.bin, as llama2.c's tokenizer.py exports it
  std::string gguf;     // the GGUF tokenizer conversion embeds
  sentencepiece::SentencePieceProcessor sp;
};

const TrainedModel& trained() {
  static const std::unique_ptr<TrainedModel> m = [] {
    auto t = std::make_unique<TrainedModel>();
    std::string corpus;
    for (int copy = 0; copy < 4; ++copy)
      for (const char* line : kCorpus) corpus += std::string(line) + "\n";
    test::write_bytes(t->dir.file("corpus.txt"), corpus);
    // The trainer logs its command line to std::cerr before it reads --minloglevel: silence it.
    std::streambuf* cerr_buf = std::cerr.rdbuf(nullptr);
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + t->dir.file("corpus.txt") + " --model_prefix=" + t->dir.file("tokenizer") +
        " --model_type=bpe --vocab_size=420 --byte_fallback=true --character_coverage=1.0"
        " --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true"
        " --split_digits=true --allow_whitespace_only_pieces=true --hard_vocab_limit=false"
        " --num_threads=1 --minloglevel=2");
    std::cerr.rdbuf(cerr_buf);
    std::cerr.clear();
    EXPECT_TRUE(status.ok()) << status.ToString();
    t->model = t->dir.file("tokenizer.model");
    EXPECT_TRUE(t->sp.Load(t->model).ok());
    // llama2.c tokenizer.py: BOS/EOS as "\n<s>\n" / "\n</s>\n", U+2581 as ' ', scores as they are.
    std::vector<std::string> pieces;
    std::vector<float> scores;
    for (int i = 0; i < t->sp.GetPieceSize(); ++i) {
      std::string p = i == t->sp.bos_id() ? "\n<s>\n" : i == t->sp.eos_id() ? "\n</s>\n" : t->sp.IdToPiece(i);
      for (size_t at; (at = p.find("\xE2\x96\x81")) != std::string::npos;) p.replace(at, 3, " ");
      pieces.push_back(p);
      scores.push_back(t->sp.GetScore(i));
    }
    t->llama2c = t->dir.file("tokenizer.bin");
    test::write_llama2c_tokenizer(t->llama2c, pieces, scores);
    t->gguf = t->dir.file("tokenizer.gguf");
    test::write_gguf_metadata(t->gguf, tokenizer_gguf_metadata(t->model));
    return t;
  }();
  return *m;
}

std::vector<int32_t> sp_encode(const sentencepiece::SentencePieceProcessor& sp, const std::string& s) {
  std::vector<int> ids;
  EXPECT_TRUE(sp.Encode(s, &ids).ok());
  return {ids.begin(), ids.end()};
}

TEST(SentencePieceReference, TrainedModelHasByteFallbackAfterTheSpecialTokens) {
  const TrainedModel& m = trained();
  ASSERT_GT(m.sp.GetPieceSize(), 300);
  EXPECT_EQ(m.sp.unk_id(), 0);
  EXPECT_EQ(m.sp.bos_id(), 1);
  EXPECT_EQ(m.sp.eos_id(), 2);
  for (int b = 0; b < 256; ++b) EXPECT_TRUE(m.sp.IsByte(b + 3)) << b;  // run.c's byte + 3
}

TEST(SentencePieceReference, EveryTokenizerEncodesAsSentencePiece) {
  const TrainedModel& m = trained();
  const auto l2c = open_tokenizer(m.llama2c);
  const auto gguf = open_tokenizer(m.gguf);
  const auto sp = open_tokenizer(m.model);
  EXPECT_EQ(l2c->kind(), "llama2c");
  EXPECT_EQ(gguf->kind(), "gguf");
  EXPECT_EQ(sp->kind(), "sentencepiece");
  EXPECT_EQ(sp->vocab_size(), static_cast<size_t>(m.sp.GetPieceSize()));
  std::vector<std::string> strings = test::tokenizer_test_strings();
  for (const char* line : kCorpus) strings.push_back(line);
  size_t merged = 0, fell_back = 0;
  for (const std::string& s : strings) {
    std::vector<int32_t> expected = sp_encode(m.sp, s);
    for (int32_t id : expected) (id < 259 ? fell_back : merged) += id >= 3;
    EXPECT_EQ(l2c->encode(s, false), expected) << "llama2c: " << s;
    EXPECT_EQ(gguf->encode(s, false), expected) << "gguf: " << s;
    EXPECT_EQ(sp->encode(s, false), expected) << "sentencepiece: " << s;
    expected.insert(expected.begin(), 1);
    EXPECT_EQ(l2c->encode(s, true), expected) << s;
    EXPECT_EQ(gguf->encode(s, true), expected) << s;
    EXPECT_EQ(sp->encode(s, true), expected) << s;
  }
  EXPECT_GT(merged, 100u);    // the strings exercise merges
  EXPECT_GT(fell_back, 20u);  // and the byte fallback
}

TEST(SentencePieceReference, EveryTokenizerDecodesAsSentencePiece) {
  const TrainedModel& m = trained();
  const auto l2c = open_tokenizer(m.llama2c);
  const auto gguf = open_tokenizer(m.gguf);
  const auto sp = open_tokenizer(m.model);
  std::vector<std::string> strings = test::tokenizer_test_strings();
  for (const char* line : kCorpus) strings.push_back(line);
  for (const std::string& s : strings) {
    std::vector<int> ids;
    ASSERT_TRUE(m.sp.Encode(s, &ids).ok());
    std::vector<int32_t> with_bos = {1};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    const std::string expected = m.sp.DecodeIds(ids);
    EXPECT_EQ(expected, s);  // identity normalisation: the text comes back
    EXPECT_EQ(test::decode_all(*l2c, with_bos), expected) << "llama2c: " << s;
    EXPECT_EQ(test::decode_all(*gguf, with_bos), expected) << "gguf: " << s;
    EXPECT_EQ(test::decode_all(*sp, with_bos), expected) << "sentencepiece: " << s;
  }
  // Token by token: every piece after another token prints as SentencePiece decodes it there.
  for (int t = 3; t < m.sp.GetPieceSize(); ++t) {
    if (m.sp.IsByte(t) && t >= 0x80 + 3) continue;  // a lone byte >= 0x80 is no UTF-8: SentencePiece writes U+FFFD
    const std::string piece = l2c->decode('x' + 3, t);
    EXPECT_EQ(m.sp.DecodeIds({'x' + 3, t}), "x" + piece) << t;
    EXPECT_EQ(gguf->decode('x' + 3, t), piece) << t;
    EXPECT_EQ(sp->decode('x' + 3, t), piece) << t;
  }
}

}  // namespace
}  // namespace wl
