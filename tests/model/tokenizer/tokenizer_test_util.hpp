// Helpers for the tokenizer tests: llama2.c tokenizer files and GGUF tokenizers written from pieces,
// a literal port of llama2.c run.c's encode as the reference for ours, and test strings.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "test_util.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::test {

// A llama2.c tokenizer file (int32 max_token_length, then per token f32 score, int32 length, bytes).
inline void write_llama2c_tokenizer(const std::string& path, const std::vector<std::string>& pieces,
                                    const std::vector<float>& scores) {
  int32_t max_len = 0;
  for (const auto& p : pieces) max_len = std::max<int32_t>(max_len, static_cast<int32_t>(p.size()));
  std::string bytes(reinterpret_cast<const char*>(&max_len), 4);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int32_t len = static_cast<int32_t>(pieces[i].size());
    bytes.append(reinterpret_cast<const char*>(&scores[i]), 4);
    bytes.append(reinterpret_cast<const char*>(&len), 4);
    bytes += pieces[i];
  }
  write_bytes(path, bytes);
}

// A GGUF file holding only `metadata` (a tokenizer, as conversion embeds it).
inline void write_gguf_metadata(const std::string& path, const GgufMetadata& metadata) {
  write_gguf(path, {}, metadata);
}

// llama2.c run.c's encode, line for line (sorted-vocab lookup, O(n^2) merge loop, byte + 3
// fallback), except that merges never produce the tokens below 259 whose text is <unk>, BOS, EOS
// or "<0xNN>" (see llama2c_tokenizer.cpp).
inline std::vector<int32_t> run_c_encode(const std::vector<std::string>& vocab, const std::vector<float>& scores,
                                         std::string_view text, bool bos) {
  std::unordered_map<std::string, int32_t> lookup;
  for (int32_t i = static_cast<int32_t>(vocab.size()) - 1; i >= 0; --i) {
    const bool byte = i < 259 && vocab[i].size() == 6 && vocab[i].starts_with("<0x");
    if (i > 2 && !byte) lookup[vocab[i]] = i;
  }
  auto str_lookup = [&](const std::string& s) {
    auto it = lookup.find(s);
    return it == lookup.end() ? -1 : it->second;
  };
  std::vector<int32_t> tokens;
  if (bos) tokens.push_back(1);
  const std::string t = text.empty() ? std::string() : " " + std::string(text);
  std::string buf;
  for (size_t c = 0; c < t.size(); ++c) {
    if ((t[c] & 0xC0) != 0x80) buf.clear();
    buf += t[c];
    if (c + 1 < t.size() && (t[c + 1] & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int32_t id = str_lookup(buf);
    if (id != -1) {
      tokens.push_back(id);
    } else {
      for (unsigned char b : buf) tokens.push_back(b + 3);
    }
    buf.clear();
  }
  const size_t first = bos ? 1 : 0;  // BOS takes no part in merges
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = first; i + 1 < tokens.size(); ++i) {
      const int id = str_lookup(vocab[tokens[i]] + vocab[tokens[i + 1]]);
      if (id != -1 && scores[id] > best_score) {
        best_score = scores[id];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  return tokens;
}

// Everything `ids` prints as, run.c's way: each token after the one before, starting after BOS.
inline std::string decode_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  int32_t prev = tok.bos_id();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == 0 && ids[i] == tok.bos_id()) continue;
    out += tok.decode(prev, ids[i]);
    prev = ids[i];
  }
  return out;
}

// Strings for agreement checks: ASCII, punctuation, digits, runs of spaces, newlines and tabs,
// multibyte UTF-8 in and out of a vocabulary, emoji.
inline std::vector<std::string> tokenizer_test_strings() {
  return {"",
          "a",
          " ",
          "Hello",
          "hello world",
          "Once upon a time, there was a little girl named Lily.",
          "She said, \"I can't find it!\" -- and ran (fast) away...",
          "The year 2024 had 366 days; 3.14159 * 2 = 6.28318",
          "  two leading spaces and  double  gaps ",
          "trailing space ",
          "line one\nline two\n\nline four\n",
          "tabs\tand\tcarriage\r\nreturns",
          "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\xBC" "ber",
          "\xC3\xA9",
          "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87",
          "\xF0\x9F\x92\xA9 emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89",
          "\xCE\xA9\xCE\xBC\xCE\xAD\xCE\xB3\xCE\xB1 \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
          "mixed: abc123\xE2\x82\xAC\xC2\xA3$%^&*()_+={}[]|\\:;'<>,.?/~`",
          "<s> </s> <unk> <0x41> look like special pieces",
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "the the the the the the the the",
          "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do."};
}

}  // namespace wl::test
