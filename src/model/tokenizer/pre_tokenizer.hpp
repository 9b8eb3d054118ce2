// How a byte-level BPE tokenizer cuts text into words before merging, and the Unicode work around
// it, through ICU: regular expressions with Unicode properties (\p{L}, \p{N}, lookahead) as Hugging
// Face's tokenizers runs them with Oniguruma, and NFC normalization.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wl::tok {

// How a Split step cuts a word at its regex's matches (tokenizers' SplitDelimiterBehavior):
// Isolated makes every match a word and every stretch between matches too; Contiguous does the
// same after joining matches that touch into one.
enum class SplitBehavior { Isolated, Contiguous };

// One Split step. tokenizers' Digits and Punctuation steps are Split steps over one character of a
// class (kDigitRegex, kPunctuationRegex): Digits' individual_digits is Isolated, else Contiguous.
struct SplitStep {
  std::string regex;  // as tokenizer.json writes it
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool operator==(const SplitStep&) const = default;
};

// Digits: Rust's char::is_numeric (general categories Nd, Nl, No).
inline constexpr std::string_view kDigitRegex = R"(\p{N})";
// Punctuation: Rust's is_ascii_punctuation or a general category P*.
inline constexpr std::string_view kPunctuationRegex = R"([\p{P}\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}])";

// A pre_tokenizer's steps: Split steps, each cutting the words of the one before, then ByteLevel's
// (a space before every word not starting with one, GPT-2's regex, every byte as its character of
// GPT-2's byte alphabet), then Split steps over those characters (falcon's digits).
struct PreTokenization {
  std::vector<SplitStep> splits;            // before ByteLevel, on the text
  bool add_prefix_space = false;            // ByteLevel: a space before every word not starting with one
  bool byte_level_regex = false;            // ByteLevel's use_regex: then GPT-2's regex (kGpt2Regex) cuts
  std::vector<SplitStep> after_byte_level;  // on the byte alphabet's characters: '0'-'9' stay digits, but
                                            // so are '²' '³' '¹' '¼' '½' '¾', the bytes B2 B3 B9 BC BD BE
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
  bool nfc = false;            // the tokenizer.json's normalizer is NFC (llama.cpp normalizes nothing)
  bool add_bos = false;        // llama.cpp's default for tokenizer.ggml.add_bos_token
};

// The entry for `name` (or one of its aliases); nullptr for a name weightloader does not run.
const NamedPreTokenizer* named_pre_tokenizer(std::string_view name);
// The first entry with these rules, ignore_merges and normalizer; nullptr when none.
const NamedPreTokenizer* pre_tokenizer_for(const PreTokenization& rules, bool ignore_merges, bool nfc);
// "gpt-2, llama-bpe, qwen2, ...": for error messages.
std::string named_pre_tokenizers();

class PreTokenizer {
 public:
  // Compiles the regexes. TokenizerUnsupported naming `origin` and the regex when ICU cannot.
  PreTokenizer(PreTokenization rules, const std::string& origin);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;

  // The words of `text` (valid UTF-8), in order, in GPT-2's byte alphabet (what BPE merges). Safe to
  // call from several threads at once.
  std::vector<std::string> words(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// `text` (valid UTF-8) in Unicode normalization form C.
std::string nfc(std::string_view text);

}  // namespace wl::tok
