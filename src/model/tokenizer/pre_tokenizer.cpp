#include "model/tokenizer/pre_tokenizer.hpp"

#include <algorithm>

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/utext.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

// tokenizer.json's regexes for Llama 3 and Qwen2 (llama.cpp quotes them as "original regex from
// tokenizer.json" and runs case-spelled equivalents): numbers in groups of up to three digits, or one.
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::vector<NamedPreTokenizer>& table() {
  static const std::vector<NamedPreTokenizer> t = {
      {"gpt-2", {}, {{}, false, true}, false, false},
      {"llama-bpe", {"llama3", "llama-v3"}, {{std::string(kLlama3Regex)}, false, false}, true, true},
      {"qwen2", {}, {{std::string(kQwen2Regex)}, false, false}, false, false},
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

const NamedPreTokenizer* pre_tokenizer_for(const PreTokenization& rules, bool ignore_merges) {
  for (const NamedPreTokenizer& p : table())
    if (p.rules == rules && p.ignore_merges == ignore_merges) return &p;
  return nullptr;
}

std::string named_pre_tokenizers() {
  std::vector<std::string_view> names;
  for (const NamedPreTokenizer& p : table()) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

struct PreTokenizer::Compiled {
  PreTokenization rules;
  std::vector<std::unique_ptr<icu::RegexPattern>> splits;  // split_regexes, then GPT-2's when byte_level_regex
};

PreTokenizer::PreTokenizer(PreTokenization rules, const std::string& origin) : compiled_(std::make_unique<Compiled>()) {
  std::vector<std::string> patterns = rules.split_regexes;
  if (rules.byte_level_regex) patterns.emplace_back(kGpt2Regex);
  for (const std::string& p : patterns) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError where{};
    std::unique_ptr<icu::RegexPattern> compiled(
        icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(p), 0, where, status));
    if (U_FAILURE(status))
      throw Error(ErrorCode::TokenizerUnsupported,
                  fmt::format("the pre-tokenizer regex '{}' does not compile (ICU: {} at offset {})", p,
                              u_errorName(status), where.offset),
                  origin);
    compiled_->splits.push_back(std::move(compiled));
  }
  compiled_->rules = std::move(rules);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;

namespace {

// Cuts every word of `in` at the matches of `pattern`: each match and each stretch between two is a word.
std::vector<std::string> split_isolated(const icu::RegexPattern& pattern, const std::vector<std::string>& in) {
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(pattern.matcher(status));
  std::vector<std::string> out;
  for (const std::string& word : in) {
    // Over the UTF-8 bytes themselves: start64/end64 are byte offsets.
    std::unique_ptr<UText, UTextCloser> text(utext_openUTF8(nullptr, word.data(), static_cast<int64_t>(word.size()), &status));
    m->reset(text.get());
    int64_t done = 0;
    while (U_SUCCESS(status) && m->find(status)) {
      const int64_t begin = m->start64(status), end = m->end64(status);
      if (begin == end) continue;
      if (begin > done) out.push_back(word.substr(done, begin - done));
      out.push_back(word.substr(begin, end - begin));
      done = end;
    }
    if (U_FAILURE(status))  // ICU's own limits (stack, time): the words cannot be told
      throw Error(ErrorCode::TokenizerUnsupported, fmt::format("the pre-tokenizer regex could not run over the text (ICU: {})", u_errorName(status)));
    if (done < static_cast<int64_t>(word.size())) out.push_back(word.substr(done));
  }
  return out;
}

}  // namespace

std::vector<std::string> PreTokenizer::words(std::string_view text) const {
  const PreTokenization& r = compiled_->rules;
  const size_t before_byte_level = r.split_regexes.size();
  std::vector<std::string> words = {std::string(text)};
  for (size_t i = 0; i < before_byte_level; ++i) words = split_isolated(*compiled_->splits[i], words);
  if (r.add_prefix_space)
    for (std::string& w : words)
      if (!w.starts_with(' ')) w.insert(0, 1, ' ');
  if (r.byte_level_regex) words = split_isolated(*compiled_->splits.back(), words);
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
