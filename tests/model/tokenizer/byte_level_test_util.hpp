// A tiny byte-level BPE tokenizer.json for the tests, written the way Hugging Face's tokenizers
// serializes one (Qwen2's and Llama 3's files have this shape), with fields to change per test.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace wl::test {

// The regexes of Llama 3's and Qwen2's published tokenizer.json (meta-llama/Meta-Llama-3-8B,
// Qwen/Qwen2-7B: pre_tokenizer.pretokenizers[0].pattern.Regex).
inline const std::string kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline const std::string kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Pieces by id, in GPT-2's byte alphabet: "Ġ" is a space, "Ċ" a newline, "Ã" "©" the bytes C3 A9
// of "é", "Ì" "ģ" the bytes CC 81 of U+0301 (combining acute).
inline const std::vector<std::string> kTinyPieces = {
    "a", "b", "c", "\xC4\xA0", "\xC4\x8A", "1", "2", "3", "4", "5",                       // 0-9
    "'", "s", "t", "i", "\xC3\x83", "\xC2\xA9", "\xC2\xBC", "ab", "bc", "abc",            // 10-19
    "\xC4\xA0" "b", "12", "123", "45", "34", "'s", "\xC3\x83\xC2\xA9", "ba", "e", "\xC3\x8C",  // 20-29
    "\xC4\xA3", "t'", "<unk>"};                                                             // 30-32

// In rank order: "3 4" first, so that without a split "12345" merges across the 3|4 boundary;
// "t '" before "' s", so that without a split "it's" keeps "t'".
inline nlohmann::json tiny_merges() {
  return {"3 4", "t '", "a b", "ab c", "b c", "\xC4\xA0 b", "1 2", "12 3", "4 5", "' s", "\xC3\x83 \xC2\xA9"};
}

inline nlohmann::json split_then_byte_level(const std::string& regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

// Llama 3's shape: Split(regex) + ByteLevel, no normalizer, ByteLevel post-processor and decoder.
inline nlohmann::json tiny_tokenizer_json(const std::string& regex = kLlama3Regex) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < kTinyPieces.size(); ++i) vocab[kTinyPieces[i]] = i;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", split_then_byte_level(regex)},
          {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", tiny_merges()}}}};
}

inline nlohmann::json added_token(int id, const std::string& content, bool special, bool normalized) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
          {"normalized", normalized}, {"special", special}};
}

inline std::string write_tokenizer_json(const TempDir& dir, const nlohmann::json& j, const std::string& name = "tokenizer.json") {
  const std::string path = dir.file(name);
  write_bytes(path, j.dump(2));
  return path;
}

}  // namespace wl::test
