#include "model/tokenizer/pre_tokenizer.hpp"

#include <algorithm>

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/utext.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/tokenizer/byte_level.hpp"
#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

// The families' tokenizer.json regexes, as the files spell them (llama.cpp's src/llama-vocab.cpp
// quotes them, some as "original regex from tokenizer.json" beside the case-spelled equivalents it
// runs; a plain string literal here reads as the JSON string does, "\r" a carriage return).
// Llama 3 and cl100k (DBRX, OLMo 2, GLM-4): numbers in groups of up to three digits; Qwen2: one.
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// o200k (tiktoken's o200k_base; gpt-oss, Llama 4): words split at a lower-to-upper case change.
constexpr std::string_view kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM (and V2): lines, Latin/Greek/Cyrillic/... letters, ASCII and full-width punctuation,
// trailing spaces, CJK and Hangul, then Digits one by one.
constexpr std::string_view kDeepSeekLlmLetters = "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
constexpr std::string_view kDeepSeekLlmPunctuation = "\\s?[!-/:-~！-／：-～‘-‟　-。]+";
constexpr std::string_view kDeepSeekCjk = "[一-龥ࠀ-一가-퟿]+";
// DeepSeek-V3 (and R1): numbers in groups of up to three digits, CJK and kana, then a Llama 3 like
// split where letters take their marks and punctuation and symbols go together.
constexpr std::string_view kDeepSeekV3Cjk = "[一-龥぀-ゟ゠-ヿ]+";
constexpr std::string_view kDeepSeekV3Regex = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

SplitStep isolated(std::string_view regex) { return {std::string(regex), SplitBehavior::Isolated}; }
SplitStep contiguous(std::string_view regex) { return {std::string(regex), SplitBehavior::Contiguous}; }

// Every pre-tokenizer weightloader runs, by llama.cpp's name; the first of equal rules is the name
// convert writes. The rules are the tokenizer.json's steps, which GGUF files name but do not hold.
const std::vector<NamedPreTokenizer>& table() {
  static const std::vector<NamedPreTokenizer> t = {
      // name, aliases, {splits, add_prefix_space, use_regex, after ByteLevel}, ignore_merges, nfc, add_bos
      {"gpt-2", {}, {{}, false, true, {}}, false, false, false},
      {"llama-bpe", {"llama3", "llama-v3"}, {{isolated(kLlama3Regex)}, false, false, {}}, true, false, true},
      {"qwen2", {"deepseek-r1-qwen"}, {{isolated(kQwen2Regex)}, false, false, {}}, false, true, false},
      {"dbrx", {"smaug-bpe", "glm4", "chatglm-bpe"}, {{isolated(kLlama3Regex)}, false, false, {}}, false, false, false},
      {"gpt-4o", {"llama4"}, {{isolated(kO200kRegex)}, false, false, {}}, false, false, false},
      {"deepseek-llm",
       {},
       {{isolated("[\r\n]"), isolated(kDeepSeekLlmLetters), isolated(kDeepSeekLlmPunctuation), isolated("\\s+$"),
         isolated(kDeepSeekCjk), isolated(kDigitRegex)},
        false, false, {}},
       false, false, false},
      {"deepseek-coder",
       {},
       {{isolated("[\r\n]"), isolated("\\s?\\p{L}+"), isolated("\\s?\\p{P}+"), isolated(kDeepSeekCjk), isolated(kDigitRegex)},
        false, false, {}},
       false, false, false},
      {"deepseek-v3", {}, {{isolated("\\p{N}{1,3}"), isolated(kDeepSeekV3Cjk), isolated(kDeepSeekV3Regex)}, false, false, {}}, false, false, false},
      // Falcon: punctuation runs, GPT-2's words, then on the byte alphabet digit runs in threes.
      {"falcon",
       {},
       {{contiguous(kPunctuationRegex)}, false, true, {contiguous(kDigitRegex), isolated("[0-9][0-9][0-9]")}},
       false, false, false},
      // StarCoder's digits one by one before GPT-2's words: also Granite 3's, SmolLM's (v1, v2).
      {"starcoder", {"refact", "smollm"}, {{isolated(kDigitRegex)}, false, true, {}}, false, false, false},
  };
  return t;
}

struct UTextCloser {
  void operator()(UText* t) const { utext_close(t); }
};

}  // namespace

const NamedPreTokenizer* named_pre_tokenizer(std::string_view name) {
  for (const NamedPreTokenizer& p : table())
    if (p.name == name || std::find(p.aliases.begin(), p.aliases.end(), name) != p.aliases.end()) return &p;
  return nullptr;
}

const NamedPreTokenizer* pre_tokenizer_for(const PreTokenization& rules, bool ignore_merges, bool nfc) {
  for (const NamedPreTokenizer& p : table())
    if (p.rules == rules && p.ignore_merges == ignore_merges && p.nfc == nfc) return &p;
  return nullptr;
}

std::string named_pre_tokenizers() {
  std::vector<std::string_view> names;
  for (const NamedPreTokenizer& p : table()) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

namespace {

struct CompiledSplit {
  std::unique_ptr<icu::RegexPattern> pattern;
  SplitBehavior behavior;
};

std::vector<CompiledSplit> compile(const std::vector<SplitStep>& steps, const std::string& origin) {
  std::vector<CompiledSplit> out;
  for (const SplitStep& s : steps) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError where{};
    // Oniguruma's Ruby syntax, which tokenizers uses: ^ and $ at every "\n", and only there.
    std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
        icu::UnicodeString::fromUTF8(s.regex), UREGEX_MULTILINE | UREGEX_UNIX_LINES, where, status));
    if (U_FAILURE(status))
      throw Error(ErrorCode::TokenizerUnsupported,
                  fmt::format("the pre-tokenizer regex '{}' does not compile (ICU: {} at offset {})", s.regex,
                              u_errorName(status), where.offset),
                  origin);
    out.push_back({std::move(compiled), s.behavior});
  }
  return out;
}

}  // namespace

struct PreTokenizer::Compiled {
  PreTokenization rules;
  std::vector<CompiledSplit> splits, after_byte_level;
  std::unique_ptr<icu::RegexPattern> gpt2;  // when byte_level_regex
};

PreTokenizer::PreTokenizer(PreTokenization rules, const std::string& origin) : compiled_(std::make_unique<Compiled>()) {
  compiled_->splits = compile(rules.splits, origin);
  compiled_->after_byte_level = compile(rules.after_byte_level, origin);
  if (rules.byte_level_regex) compiled_->gpt2 = std::move(compile({SplitStep{std::string(kGpt2Regex)}}, origin).front().pattern);
  compiled_->rules = std::move(rules);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;

namespace {

// Cuts every word of `in` at the matches of `pattern`: each match and each stretch between two is a
// word; with Contiguous, matches that touch are one.
std::vector<std::string> split(const icu::RegexPattern& pattern, SplitBehavior behavior, const std::vector<std::string>& in) {
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(pattern.matcher(status));
  std::vector<std::string> out;
  for (const std::string& word : in) {
    // Over the UTF-8 bytes themselves: start64/end64 are byte offsets.
    std::unique_ptr<UText, UTextCloser> text(utext_openUTF8(nullptr, word.data(), static_cast<int64_t>(word.size()), &status));
    m->reset(text.get());
    int64_t done = 0;
    bool last_was_match = false;  // out.back() is a match that ends at `done`
    while (U_SUCCESS(status) && m->find(status)) {
      const int64_t begin = m->start64(status), end = m->end64(status);
      if (begin == end) continue;
      if (begin > done) {
        out.push_back(word.substr(done, begin - done));
      } else if (last_was_match && behavior == SplitBehavior::Contiguous) {
        out.back().append(word, begin, end - begin);
        done = end;
        continue;
      }
      out.push_back(word.substr(begin, end - begin));
      done = end;
      last_was_match = true;
    }
    if (U_FAILURE(status))  // ICU's own limits (stack, time): the words cannot be told
      throw Error(ErrorCode::TokenizerUnsupported, fmt::format("the pre-tokenizer regex could not run over the text (ICU: {})", u_errorName(status)));
    if (done < static_cast<int64_t>(word.size())) out.push_back(word.substr(done));
  }
  return out;
}

}  // namespace

std::vector<std::string> PreTokenizer::words(std::string_view text) const {
  const Compiled& c = *compiled_;
  std::vector<std::string> words = {std::string(text)};
  for (const CompiledSplit& s : c.splits) words = split(*s.pattern, s.behavior, words);
  if (c.rules.add_prefix_space)
    for (std::string& w : words)
      if (!w.starts_with(' ')) w.insert(0, 1, ' ');
  if (c.gpt2) words = split(*c.gpt2, SplitBehavior::Isolated, words);
  for (std::string& w : words) w = bytes_to_alphabet(w);
  for (const CompiledSplit& s : c.after_byte_level) words = split(*s.pattern, s.behavior, words);
  return words;
}

std::string nfc(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  std::string out;
  if (U_SUCCESS(status) && n->isNormalized(u, status)) return std::string(text);
  if (U_SUCCESS(status)) n->normalize(u, status).toUTF8String(out);
  if (U_FAILURE(status)) throw Error(ErrorCode::InvalidArgument, fmt::format("NFC normalization failed (ICU: {})", u_errorName(status)));
  return out;
}

}  // namespace wl::tok
