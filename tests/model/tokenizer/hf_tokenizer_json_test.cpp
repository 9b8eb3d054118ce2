// Hugging Face tokenizer.json with a byte-level BPE model: a tiny vocabulary written here, with the
// regexes of Llama 3's and Qwen2's published files. Every expected id below was also produced by
// Hugging Face's tokenizers (0.23, its Node binding) from the same file when the test was written;
// scripts/tokenizer-vectors-check.sh checks the real vocabularies against llama.cpp's vectors.
#include <gtest/gtest.h>

#include "model/tokenizer/byte_level_test_util.hpp"
#include "model/tokenizer/tokenizer_test_util.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;

std::unique_ptr<Tokenizer> open_json(const json& j) {
  test::TempDir dir;
  return open_tokenizer(test::write_tokenizer_json(dir, j));
}

TEST(TokenizerJson, MergesApplyInRankOrder) {
  const auto tok = open_json(test::tiny_tokenizer_json());
  EXPECT_EQ(tok->kind(), "tokenizer.json");
  EXPECT_EQ(tok->vocab_size(), test::kTinyPieces.size());
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->encode("abc", true), (Ids{19}));  // a b -> ab, then ab c -> abc
  // "b c" ranked before "a b": bc first, and no rule joins a + bc, although "abc" is a piece.
  json j = test::tiny_tokenizer_json();
  j["model"]["merges"] = {"b c", "a b", "ab c"};
  EXPECT_EQ(open_json(j)->encode("abc", false), (Ids{0, 18}));
  // The same rules as [left, right] pairs (Qwen2's files): the same ids.
  json pairs = test::tiny_tokenizer_json();
  pairs["model"]["merges"] = json::array();
  for (const json& m : test::tiny_merges()) {
    const std::string s = m.get<std::string>();
    pairs["model"]["merges"].push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  const auto from_pairs = open_json(pairs);
  for (const std::string s : {"abc", "12345", "it's", "a  b", "\xC3\xA9"})
    EXPECT_EQ(from_pairs->encode(s, false), tok->encode(s, false)) << s;
}

TEST(TokenizerJson, BytesGoThroughTheByteAlphabet) {
  const auto tok = open_json(test::tiny_tokenizer_json());
  EXPECT_EQ(tok->encode("\xC3\xA9", false), (Ids{26}));      // é: Ã + © merged
  EXPECT_EQ(tok->encode("\xC3\xBC", false), (Ids{14, 16}));  // ü: Ã, ¼
  EXPECT_EQ(tok->encode("a\nb", false), (Ids{0, 4, 1}));
  EXPECT_EQ(tok->decode(-1, 26), "\xC3\xA9");
  EXPECT_EQ(tok->decode(-1, 14), "\xC3");  // half a character: bytes, as the interface says
  EXPECT_EQ(tok->decode(-1, 20), " b");    // Ġb: the space is kept, after BOS too
  EXPECT_EQ(tok->decode(tok->bos_id(), 20), " b");
  EXPECT_EQ(test::decode_all(*tok, tok->encode("ab c\n\xC3\xBC", false)), "ab c\n\xC3\xBC");
  test::expect_error(ErrorCode::TokenOutOfRange, [&] { tok->decode(-1, 33); });
  test::expect_error(ErrorCode::InvalidArgument, [&] { tok->encode("a\xC3", false); });  // not UTF-8
}

TEST(TokenizerJson, Llama3AndQwen2RegexesSplitWords) {
  const auto llama3 = open_json(test::tiny_tokenizer_json(test::kLlama3Regex));
  const auto qwen2 = open_json(test::tiny_tokenizer_json(test::kQwen2Regex));
  json no_split = test::tiny_tokenizer_json();
  no_split["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  const auto whole = open_json(no_split);
  // Numbers: Llama 3 in groups of up to three digits, Qwen2 one digit each; unsplit, 3|4 merges.
  EXPECT_EQ(llama3->encode("12345", false), (Ids{22, 23}));
  EXPECT_EQ(qwen2->encode("12345", false), (Ids{5, 6, 7, 8, 9}));
  EXPECT_EQ(whole->encode("12345", false), (Ids{21, 24, 9}));
  // Contractions are words of their own ("it" "'s"); unsplit, "t '" ranks first.
  EXPECT_EQ(llama3->encode("it's", false), (Ids{13, 12, 25}));
  EXPECT_EQ(whole->encode("it's", false), (Ids{13, 31, 11}));
  // \s+(?!\S): of two spaces the first is a word, the second starts " b".
  EXPECT_EQ(llama3->encode("a  b", false), (Ids{0, 3, 20}));
  // ByteLevel's own GPT-2 regex with its leading space (GPT-2's tokenizer.json).
  json gpt2 = test::tiny_tokenizer_json();
  gpt2["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  EXPECT_EQ(open_json(gpt2)->encode("b it's", false), (Ids{20, 3, 13, 12, 25}));
}

// tokenizers' Digits and Punctuation steps, Contiguous splits, and steps after ByteLevel, which see
// its byte alphabet (falcon's Digits): "ü" is "Ã¼" there, and "¼" is a digit. The tiny vocabulary
// with "Ã¼" (33) and "''" (34) and their merges.
TEST(TokenizerJson, DigitsPunctuationContiguousAndStepsAfterByteLevel) {
  json base = test::tiny_tokenizer_json();
  base["model"]["vocab"]["\xC3\x83\xC2\xBC"] = 33;
  base["model"]["vocab"]["''"] = 34;
  base["model"]["merges"].push_back("\xC3\x83 \xC2\xBC");
  base["model"]["merges"].push_back("' '");
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  auto with = [&](json before, json after = json::array()) {  // before, after: arrays of steps
    json steps = std::move(before);
    steps.push_back(byte_level);
    for (const json& s : after) steps.push_back(s);
    json j = base;
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
    return open_json(j);
  };
  const json digits = {{"type", "Digits"}, {"individual_digits", true}};
  const json digit_runs = {{"type", "Digits"}, {"individual_digits", false}};
  const json punctuation = {{"type", "Punctuation"}, {"behavior", "Isolated"}};
  const json punctuation_runs = {{"type", "Punctuation"}, {"behavior", "Contiguous"}};
  const json quote_runs = {{"type", "Split"}, {"pattern", {{"Regex", "'"}}}, {"behavior", "Contiguous"}, {"invert", false}};
  // The ids tokenizers 0.23.3 gives for the same files.
  EXPECT_EQ(with(json::array({digits}))->encode("a12b", false), (Ids{0, 5, 6, 1}));
  EXPECT_EQ(with(json::array({digit_runs}))->encode("a12b", false), (Ids{0, 21, 1}));
  EXPECT_EQ(with(json::array({punctuation}))->encode("it's", false), (Ids{13, 12, 10, 11}));
  EXPECT_EQ(with(json::array({punctuation}))->encode("a''b", false), (Ids{0, 10, 10, 1}));
  EXPECT_EQ(with(json::array({punctuation_runs}))->encode("a''b", false), (Ids{0, 34, 1}));
  EXPECT_EQ(with(json::array({quote_runs}))->encode("a''b", false), (Ids{0, 34, 1}));
  EXPECT_EQ(with(json::array({quote_runs}))->encode("it's", false), (Ids{13, 12, 10, 11}));
  EXPECT_EQ(with(json::array())->encode("b\xC3\xBC" "1", false), (Ids{1, 33, 5}));
  EXPECT_EQ(with(json::array(), json::array({digit_runs}))->encode("b\xC3\xBC" "1", false), (Ids{1, 14, 16, 5}));
}

// "$" as Oniguruma (Ruby syntax) reads it for tokenizers: before every "\n" (DeepSeek LLM's "\s+$"
// step), so " " before a newline is a word of its own, and "ĠĊ" (33) cannot merge there.
TEST(TokenizerJson, DollarMatchesBeforeEveryNewline) {
  json j = test::tiny_tokenizer_json();
  j["model"]["vocab"]["\xC4\xA0\xC4\x8A"] = 33;
  j["model"]["merges"].push_back("\xC4\xA0 \xC4\x8A");
  j["pre_tokenizer"] = test::split_then_byte_level("\\s+$");
  const auto tok = open_json(j);
  EXPECT_EQ(tok->encode("a \nb", false), (Ids{0, 3, 4, 1}));  // tokenizers 0.23.3's ids
  EXPECT_EQ(tok->encode("a \n", false), (Ids{0, 33}));
}

TEST(TokenizerJson, AddedTokensFirstLongestFirst) {
  json j = test::tiny_tokenizer_json();
  j["added_tokens"] = {test::added_token(33, "<|x|>", true, false), test::added_token(34, "<|x|>ab", false, true),
                       test::added_token(35, "\xC3\xA9", false, true)};
  const auto tok = open_json(j);
  EXPECT_EQ(tok->vocab_size(), 36u);
  // Tokens matched in the text as given come first: "<|x|>" before the normalized "<|x|>ab".
  EXPECT_EQ(tok->encode("c<|x|>abc<|x|>", false), (Ids{2, 33, 19, 33}));
  EXPECT_EQ(tok->decode(-1, 33), "<|x|>");
  EXPECT_EQ(tok->decode(-1, 34), "<|x|>ab");
  EXPECT_EQ(tok->encode("\xC3\xA9", false), (Ids{35}));
  // A normalized added token is found after normalization: NFC composes e + U+0301 into é.
  EXPECT_EQ(tok->encode("e\xCC\x81", false), (Ids{28, 29, 30}));
  j["normalizer"] = {{"type", "NFC"}};
  EXPECT_EQ(open_json(j)->encode("e\xCC\x81", false), (Ids{35}));
  // Of two tokens of one kind starting at one place, the longer.
  j["added_tokens"][1]["normalized"] = false;
  EXPECT_EQ(open_json(j)->encode("c<|x|>abc<|x|>", false), (Ids{2, 34, 2, 33}));
}

TEST(TokenizerJson, PostProcessorDecidesBos) {
  json j = test::tiny_tokenizer_json();
  // json::array: one braced element is a copy, not an array, under clang.
  j["added_tokens"] = json::array({test::added_token(33, "<|begin_of_text|>", true, false)});
  EXPECT_EQ(open_json(j)->encode("ab", true), (Ids{17}));  // ByteLevel post-processor: nothing added
  // Llama 3.1's: Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)].
  j["post_processor"] = json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [],
       "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [33], "tokens": ["<|begin_of_text|>"]}}}]})");
  const auto tok = open_json(j);
  EXPECT_EQ(tok->bos_id(), 33);
  EXPECT_EQ(tok->encode("ab", true), (Ids{33, 17}));
  EXPECT_EQ(tok->encode("ab", false), (Ids{17}));
  EXPECT_EQ(test::decode_all(*tok, tok->encode("ab", true)), "ab");
}

TEST(TokenizerJson, IgnoreMergesUnknownAndFusedUnknown) {
  json j = test::tiny_tokenizer_json();
  EXPECT_EQ(open_json(j)->encode("ba", false), (Ids{1, 0}));  // no rule makes "ba"
  j["model"]["ignore_merges"] = true;                         // Llama 3's: a word that is a piece
  EXPECT_EQ(open_json(j)->encode("ba", false), (Ids{27}));
  EXPECT_EQ(open_json(j)->encode("zaz", false), (Ids{0}));  // no unk_token: unknown symbols dropped
  j["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(open_json(j)->encode("zza", false), (Ids{32, 32, 0}));
  j["model"]["fuse_unk"] = true;
  EXPECT_EQ(open_json(j)->encode("zza", false), (Ids{32, 0}));
}

// One file per refusal: the error names the file and the field.
TEST(TokenizerJson, RefusesWhatItDoesNotRunNamingTheField) {
  struct Case {
    const char* field;
    ErrorCode code;
    json patch;  // merged into the tiny file (json::merge_patch)
  };
  const json split = test::split_then_byte_level(test::kLlama3Regex);
  auto step = [&](const char* key, json value) {
    json p = split;
    p["pretokenizers"][0][key] = std::move(value);
    return json{{"pre_tokenizer", p}};
  };
  const std::vector<Case> cases = {
      {"model.type is 'WordPiece'", ErrorCode::TokenizerUnsupported, {{"model", {{"type", "WordPiece"}}}}},
      {"model.dropout", ErrorCode::TokenizerUnsupported, {{"model", {{"dropout", 0.1}}}}},
      {"model.continuing_subword_prefix", ErrorCode::TokenizerUnsupported, {{"model", {{"continuing_subword_prefix", "##"}}}}},
      {"model.merges[0] names 'x'", ErrorCode::TokenizerInvalid, {{"model", {{"merges", {"x a"}}}}}},
      {"model.merges[0] 'abc' is not two pieces", ErrorCode::TokenizerInvalid, {{"model", {{"merges", {"abc"}}}}}},
      {"model.vocab['b'] is 0, the id of 'a' too", ErrorCode::TokenizerInvalid, {{"model", {{"vocab", {{"a", 0}, {"b", 0}}}}}}},
      {"normalizer.type is 'Lowercase'", ErrorCode::TokenizerUnsupported, {{"normalizer", {{"type", "Lowercase"}}}}},
      {"pre_tokenizer.type is 'Whitespace'", ErrorCode::TokenizerUnsupported, {{"pre_tokenizer", {{"type", "Whitespace"}}}}},
      {"pre_tokenizer.pretokenizers[0].behavior is 'Removed'", ErrorCode::TokenizerUnsupported, step("behavior", "Removed")},
      {"pre_tokenizer.pretokenizers[0].invert", ErrorCode::TokenizerUnsupported, step("invert", true)},
      {"does not compile", ErrorCode::TokenizerUnsupported, step("pattern", {{"Regex", "(unclosed"}})},
      {"added_tokens[0].lstrip", ErrorCode::TokenizerUnsupported, {{"added_tokens", {{{"id", 33}, {"content", "<x>"}, {"lstrip", true}}}}}},
      {"post_processor.type is 'RobertaProcessing'", ErrorCode::TokenizerUnsupported, {{"post_processor", {{"type", "RobertaProcessing"}}}}},
      {"decoder.type is 'WordPiece'", ErrorCode::TokenizerUnsupported, {{"decoder", {{"type", "WordPiece"}}}}},
      {"truncation", ErrorCode::TokenizerUnsupported, {{"truncation", {{"max_length", 8}}}}},
      {"normalizer.normalizers[1].type is 'Lowercase'", ErrorCode::TokenizerUnsupported,
       {{"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}}}}},
      {"pre_tokenizer.pretokenizers[0].type is 'Metaspace'", ErrorCode::TokenizerUnsupported,
       {{"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Metaspace"}}}}}}}},
      {"pre_tokenizer.pretokenizers has no ByteLevel step", ErrorCode::TokenizerUnsupported,
       {{"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}}}}}}},
      {"pre_tokenizer.pretokenizers[1].type is 'ByteLevel'", ErrorCode::TokenizerUnsupported,
       {{"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "ByteLevel"}}}}}}}},
      {"pre_tokenizer.pretokenizers[0].behavior is 'MergedWithPrevious'", ErrorCode::TokenizerUnsupported,
       {{"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Punctuation"}, {"behavior", "MergedWithPrevious"}}, {{"type", "ByteLevel"}}}}}}}},
  };
  for (const Case& c : cases) {
    json j = test::tiny_tokenizer_json();
    if (c.patch.contains("model") && c.patch["model"].contains("vocab")) j["model"]["vocab"] = json::object();
    j.merge_patch(c.patch);
    test::TempDir dir;
    const std::string path = test::write_tokenizer_json(dir, j);
    const std::string msg = test::expect_error(c.code, [&] { open_tokenizer(path); });
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
  test::TempDir dir;
  test::write_bytes(dir.file("bad.json"), "{\"model\": ");
  const std::string msg = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(dir.file("bad.json")); });
  EXPECT_NE(msg.find("is not JSON"), std::string::npos) << msg;
  // A number no double holds (the fuzzer's find: nlohmann throws out_of_range, not parse_error).
  test::write_bytes(dir.file("huge.json"), "{\"\":2222228888888888888888888888e0687399551400673278}");
  const std::string huge = test::expect_error(ErrorCode::TokenizerInvalid, [&] { open_tokenizer(dir.file("huge.json")); });
  EXPECT_NE(huge.find("is not JSON"), std::string::npos) << huge;
}

TEST(TokenizerJson, ConvertsToAGgufVocabularyThatEncodesAlike) {
  test::TempDir dir;
  json j = test::tiny_tokenizer_json(test::kQwen2Regex);
  j["normalizer"] = {{"type", "NFC"}};  // as Qwen2's files: the qwen2 name stands for it
  j["added_tokens"] = {test::added_token(33, "<|endoftext|>", true, false), test::added_token(34, "<think>", false, false)};
  const std::string path = test::write_tokenizer_json(dir, j);
  const GgufMetadata meta = tokenizer_gguf_metadata(path);
  EXPECT_EQ(std::get<std::string>(meta.at("tokenizer.ggml.model")), "gpt2");
  EXPECT_EQ(std::get<std::string>(meta.at("tokenizer.ggml.pre")), "qwen2");
  const auto& merges = *std::get<GgufArray>(meta.at("tokenizer.ggml.merges")).get<std::string>();
  EXPECT_EQ(merges.front(), "3 4");
  const auto& types = *std::get<GgufArray>(meta.at("tokenizer.ggml.token_type")).get<int32_t>();
  EXPECT_EQ((Ids(types.begin() + 31, types.end())), (Ids{1, 1, 3, 4}));  // normal, control, user-defined
  test::write_gguf_metadata(dir.file("t.gguf"), meta);
  const auto json_tok = open_tokenizer(path), gguf_tok = open_tokenizer(dir.file("t.gguf"));
  EXPECT_EQ(gguf_tok->kind(), "gguf");
  for (const std::string s : {"abc", "12345 it's", "a  b\n\xC3\xA9", "e\xCC\x81", "<|endoftext|>ab<think>"})
    EXPECT_EQ(gguf_tok->encode(s, true), json_tok->encode(s, true)) << s;
  // Rules no llama.cpp pre-tokenizer name stands for cannot go into GGUF.
  j["pre_tokenizer"] = test::split_then_byte_level("\\p{L}+");
  const std::string other = test::write_tokenizer_json(dir, j, "other.json");
  const std::string msg = test::expect_error(ErrorCode::TokenizerUnsupported, [&] { tokenizer_gguf_metadata(other); });
  EXPECT_NE(msg.find("none that llama.cpp runs by name"), std::string::npos) << msg;
  // Qwen2's regex without its NFC normalizer is not what the qwen2 name stands for.
  j["pre_tokenizer"] = test::split_then_byte_level(test::kQwen2Regex);
  j["normalizer"] = nullptr;
  const std::string no_nfc = test::write_tokenizer_json(dir, j, "no_nfc.json");
  test::expect_error(ErrorCode::TokenizerUnsupported, [&] { tokenizer_gguf_metadata(no_nfc); });
}

}  // namespace
}  // namespace wl
