#include "model/tokenizer/byte_level_bpe.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "model/tokenizer/byte_level.hpp"
#include "model/tokenizer/pieces.hpp"
#include "core/utf8.hpp"
#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

// A stretch of the text: an added token's id, or text still to tokenize (id -1).
struct Segment {
  int32_t id;
  std::string text;
};

// The added tokens of one kind (normalized or not) by first byte, longest first.
class AddedMatcher {
 public:
  AddedMatcher(const std::vector<AddedToken>& added, bool normalized) {
    for (const AddedToken& t : added)
      if (t.normalized == normalized && !t.content.empty()) by_first_[static_cast<unsigned char>(t.content[0])].push_back(&t);
    for (auto& list : by_first_)
      std::stable_sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->content.size() > b->content.size(); });
  }

  // Cuts the text segments of `in` at the added tokens, leftmost first, the longest at one place.
  std::vector<Segment> cut(std::vector<Segment> in) const {
    std::vector<Segment> out;
    for (Segment& s : in) {
      if (s.id >= 0) {
        out.push_back(std::move(s));
        continue;
      }
      size_t done = 0;
      for (size_t i = 0; i < s.text.size(); ++i) {
        const AddedToken* hit = match(s.text, i);
        if (!hit) continue;
        if (i > done) out.push_back({-1, s.text.substr(done, i - done)});
        out.push_back({hit->id, {}});
        done = i + hit->content.size();
        i = done - 1;
      }
      if (done < s.text.size()) out.push_back({-1, s.text.substr(done)});
    }
    return out;
  }

 private:
  const AddedToken* match(std::string_view text, size_t at) const {
    for (const AddedToken* t : by_first_[static_cast<unsigned char>(text[at])])
      if (text.substr(at).starts_with(t->content)) return t;
    return nullptr;
  }

  std::array<std::vector<const AddedToken*>, 256> by_first_;
};

class ByteLevelBpeTokenizer : public Tokenizer {
 public:
  ByteLevelBpeTokenizer(ByteLevelBpeVocab v, std::string kind, std::string origin)
      : v_(std::move(v)),
        kind_(std::move(kind)),
        origin_(std::move(origin)),
        merger_(v_.pieces, [this](int32_t id) { return bool(v_.in_model[id]); }, v_.merges),
        pre_(v_.pre, origin_),
        raw_(v_.added, false),
        normalized_(v_.added, true) {
    added_id_.assign(v_.pieces.size(), false);
    for (const AddedToken& t : v_.added) added_id_[t.id] = true;
  }

  std::string kind() const override { return kind_; }
  size_t vocab_size() const override { return v_.pieces.size(); }
  int32_t bos_id() const override { return v_.bos; }
  int32_t eos_id() const override { return v_.eos; }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    if (const auto bad = safetensors::find_invalid_utf8(text))
      throw Error(ErrorCode::InvalidArgument, fmt::format("the text is not valid UTF-8 (byte {})", *bad), origin_);
    std::vector<int32_t> ids;
    if (add_bos) ids = v_.prefix;
    // As tokenizers: tokens that are not normalized are found in the text as given, the others
    // after normalization.
    std::vector<Segment> segments = raw_.cut({{-1, std::string(text)}});
    if (v_.nfc)
      for (Segment& s : segments)
        if (s.id < 0) s.text = nfc(s.text);
    for (const Segment& s : normalized_.cut(std::move(segments))) {
      if (s.id >= 0) {
        ids.push_back(s.id);
        continue;
      }
      for (const std::string& word : pre_.words(s.text)) encode_word(word, ids);
    }
    if (add_bos) ids.insert(ids.end(), v_.suffix.begin(), v_.suffix.end());
    return ids;
  }

  // The token's bytes: an added token's content as it is, a piece's bytes through the alphabet (a
  // piece with a code point outside it as it is, as tokenizers' ByteLevel decoder does). No space
  // is dropped after BOS: byte-level pieces carry their own spaces.
  std::string decode(int32_t, int32_t token) const override {
    if (token < 0 || static_cast<size_t>(token) >= v_.pieces.size() || !v_.present[token])
      throw Error(ErrorCode::TokenOutOfRange,
                  fmt::format("token {} is not in the vocabulary of {} ids", token, v_.pieces.size()), origin_);
    const std::string& piece = v_.pieces[token];
    if (added_id_[token]) return piece;
    return alphabet_to_bytes(piece).value_or(piece);
  }

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& ids) const {
    if (v_.ignore_merges)
      if (const int32_t id = merger_.find(word); id >= 0) return ids.push_back(id);
    const size_t first = ids.size();
    merger_.encode(word, ids, [&](std::string_view symbol, std::vector<int32_t>& out) {
      if (v_.byte_fallback && fallback_bytes(symbol, out)) return;
      if (v_.unk < 0) return;  // tokenizers drops a symbol it has no token for
      if (v_.fuse_unk && out.size() > first && out.back() == v_.unk) return;
      out.push_back(v_.unk);
    });
  }

  // The "<0xNN>" pieces of `symbol`'s bytes, when all of them exist.
  bool fallback_bytes(std::string_view symbol, std::vector<int32_t>& out) const {
    std::vector<int32_t> bytes;
    for (unsigned char b : symbol) {
      const int32_t id = merger_.find(fmt::format("<0x{:02X}>", b));
      if (id < 0) return false;
      bytes.push_back(id);
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
    return true;
  }

  ByteLevelBpeVocab v_;
  std::string kind_, origin_;
  BpeMerger merger_;
  PreTokenizer pre_;
  AddedMatcher raw_, normalized_;
  std::vector<bool> added_id_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(ByteLevelBpeVocab vocab, std::string kind, std::string origin) {
  return std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), std::move(kind), std::move(origin));
}

GgufMetadata byte_level_vocab_to_gguf(const ByteLevelBpeVocab& v, const std::string& origin) {
  const NamedPreTokenizer* named = pre_tokenizer_for(v.pre, v.ignore_merges, v.nfc);
  if (!named)
    throw Error(ErrorCode::TokenizerUnsupported,
                fmt::format("its pre-tokenizer (with its ignore_merges and normalizer) is none that llama.cpp runs by name ({}): GGUF cannot say how to cut words",
                            named_pre_tokenizers()),
                origin);
  if (v.byte_fallback)
    throw Error(ErrorCode::TokenizerUnsupported, "byte_fallback: llama.cpp's gpt2 tokenizer has no byte fallback", origin);
  const bool bos_first = v.prefix.size() == 1 && v.prefix[0] == v.bos, eos_last = v.suffix.size() == 1 && v.suffix[0] == v.eos;
  if ((!v.prefix.empty() && !bos_first) || (!v.suffix.empty() && !eos_last))
    throw Error(ErrorCode::TokenizerUnsupported,
                "its post-processor adds tokens other than one BOS first and one EOS last, which GGUF cannot say", origin);
  std::vector<int32_t> types(v.pieces.size(), static_cast<int32_t>(TokenType::Normal));
  for (size_t i = 0; i < v.pieces.size(); ++i)
    if (!v.present[i]) throw Error(ErrorCode::TokenizerInvalid, fmt::format("id {} has no token; GGUF numbers tokens 0..n-1", i), origin);
  for (const AddedToken& t : v.added) types[t.id] = static_cast<int32_t>(t.special ? TokenType::Control : TokenType::UserDefined);
  std::vector<std::string> merges;
  merges.reserve(v.merges.size());
  for (const RankedMerge& m : v.merges) {
    const std::string &l = v.pieces[m.left], &r = v.pieces[m.right];
    if (l.find(' ') != std::string::npos || r.find(' ') != std::string::npos)
      throw Error(ErrorCode::TokenizerUnsupported,
                  fmt::format("the merge '{}' + '{}' has a space in a part, which GGUF's \"left right\" merges cannot hold", l, r), origin);
    merges.push_back(l + " " + r);
  }
  GgufMetadata m = {
      {"tokenizer.ggml.model", std::string("gpt2")},
      {"tokenizer.ggml.pre", std::string(named->name)},
      {"tokenizer.ggml.tokens", GgufArray{v.pieces}},
      {"tokenizer.ggml.token_type", GgufArray{std::move(types)}},
      {"tokenizer.ggml.merges", GgufArray{std::move(merges)}},
      {"tokenizer.ggml.add_bos_token", bos_first},
      {"tokenizer.ggml.add_eos_token", eos_last},
  };
  if (v.bos >= 0) m["tokenizer.ggml.bos_token_id"] = static_cast<uint32_t>(v.bos);
  if (v.eos >= 0) m["tokenizer.ggml.eos_token_id"] = static_cast<uint32_t>(v.eos);
  if (v.unk >= 0) m["tokenizer.ggml.unknown_token_id"] = static_cast<uint32_t>(v.unk);
  return m;
}

}  // namespace wl::tok
