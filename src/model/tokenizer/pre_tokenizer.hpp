// How a byte-level BPE tokenizer cuts text into words before merging, and the Unicode work around
// it, through ICU: regular expressions with Unicode properties (\p{L}, \p{N}, lookahead) as Hugging
// Face's tokenizers runs them with Oniguruma, and NFC normalization.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wl::tok {

// Hugging Face's Split steps with the "Isolated" behaviour (every match a word, and every stretch
// between matches too), each cutting the words of the one before, then ByteLevel's two steps.
struct PreTokenization {
  std::vector<std::string> split_regexes;  // as tokenizer.json writes them
  bool add_prefix_space = false;           // ByteLevel: a space before every word not starting with one
  bool byte_level_regex = false;           // ByteLevel's use_regex: then GPT-2's regex (kGpt2Regex) cuts
  bool operator==(const PreTokenization&) const = default;
};

// The regex of ByteLevel's use_regex (GPT-2's encoder.py, with tokenizers' final \s+).
inline constexpr std::string_view kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A pre-tokenizer llama.cpp knows by name (GGUF's tokenizer.ggml.pre), with the rules of the
// tokenizer.json it stands for and what llama.cpp sets with it (src/llama-vocab.cpp).
struct NamedPreTokenizer {
  std::string_view name;                  // as GGUF writes it
  std::vector<std::string_view> aliases;  // llama.cpp's other names for the same rules
  PreTokenization rules;
  bool ignore_merges = false;  // a word that is a token is that token, merges or not
  bool add_bos = false;        // llama.cpp's default for tokenizer.ggml.add_bos_token
};

// The entry for `name` (or one of its aliases); nullptr for a name weightloader does not run.
const NamedPreTokenizer* named_pre_tokenizer(std::string_view name);
// The entry whose rules and ignore_merges are these; nullptr when none.
const NamedPreTokenizer* pre_tokenizer_for(const PreTokenization& rules, bool ignore_merges);
// "gpt-2, llama-bpe, qwen2": for error messages.
std::string named_pre_tokenizers();

class PreTokenizer {
 public:
  // Compiles the regexes. TokenizerUnsupported naming `origin` and the regex when ICU cannot.
  PreTokenizer(PreTokenization rules, const std::string& origin);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;

  // The words of `text` (valid UTF-8), in order. Safe to call from several threads at once.
  std::vector<std::string> words(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// `text` (valid UTF-8) in Unicode normalization form C.
std::string nfc(std::string_view text);

}  // namespace wl::tok
