#include "model/tokenizer/gguf_tokenizer.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "model/tokenizer/bpe_merge.hpp"
#include "model/tokenizer/byte_level_bpe.hpp"

#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

class ScoredVocabTokenizer : public Tokenizer {
 public:
  ScoredVocabTokenizer(ScoredVocab v, std::string origin)
      : v_(std::move(v)), origin_(std::move(origin)), merger_(v_.pieces, v_.scores, [this](int32_t id) {
          // SentencePiece's pieces_ map: merges never produce control, unknown or byte tokens.
          const TokenType t = v_.types[id];
          return t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused;
        }) {
    byte_ids_.fill(-1);
    for (size_t i = 0; i < v_.pieces.size(); ++i)
      if (v_.types[i] == TokenType::Byte)
        if (auto b = byte_piece_value(v_.pieces[i]); b && byte_ids_[*b] < 0) byte_ids_[*b] = static_cast<int32_t>(i);
  }

  std::string kind() const override { return "gguf"; }
  size_t vocab_size() const override { return v_.pieces.size(); }
  int32_t bos_id() const override { return v_.bos; }
  int32_t eos_id() const override { return v_.eos; }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int32_t> ids;
    if (add_bos && v_.bos >= 0) ids.push_back(v_.bos);
    if (text.empty()) return ids;
    const std::string s = (v_.add_space_prefix ? std::string(kSpaceSymbol) : std::string()) + spaces_to_symbol(text);
    merger_.encode(s, ids, [this](std::string_view bytes, std::vector<int32_t>& out) {
      bool all_bytes = true;
      for (unsigned char b : bytes) all_bytes = all_bytes && byte_ids_[b] >= 0;
      if (all_bytes) {
        for (unsigned char b : bytes) out.push_back(byte_ids_[b]);
      } else if (out.empty() || out.back() != v_.unk) {  // SentencePiece folds a run of unknowns into one
        out.push_back(v_.unk);
      }
    });
    return ids;
  }

  std::string decode(int32_t prev, int32_t token) const override {
    if (token < 0 || static_cast<size_t>(token) >= v_.pieces.size())
      throw Error(ErrorCode::TokenOutOfRange,
                  fmt::format("token {} is outside the vocabulary of {} tokens", token, v_.pieces.size()), origin_);
    const std::string& piece = v_.pieces[token];
    switch (v_.types[token]) {
      case TokenType::Control:
        return {};
      case TokenType::Unknown:
        return std::string(kUnknownSurface);
      case TokenType::Byte:
        if (auto b = byte_piece_value(piece)) return std::string(1, static_cast<char>(*b));
        break;
      default:
        break;
    }
    std::string text = symbol_to_spaces(piece);
    if (prev == v_.bos && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
  }

 private:
  ScoredVocab v_;
  std::string origin_;
  BpeMerger merger_;
  std::array<int32_t, 256> byte_ids_;
};

template <typename T>
const std::vector<T>* typed_array(const GgufFile& f, std::string_view key, std::string_view element_type, bool required) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (required) throw Error(ErrorCode::TokenizerInvalid, fmt::format("{} is missing", key), f.path);
    return nullptr;
  }
  const GgufArray* a = std::get_if<GgufArray>(v);
  const std::vector<T>* elements = a ? a->get<T>() : nullptr;
  if (!elements)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} is {}, not an array of {}", key,
                            a ? fmt::format("an array of {}", gguf_type_name(a->type())) : std::string(gguf_type_name(gguf_value_type(*v))),
                            element_type),
                f.path);
  return elements;
}

int32_t special_id(const GgufFile& f, std::string_view key, int32_t fallback, size_t n) {
  const GgufValue* v = f.find(key);
  if (!v) return fallback;
  const std::optional<uint64_t> id = gguf_value_to_uint(*v);
  if (!id || *id >= n)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} is {}, not a token id below the vocabulary size {}", key, gguf_value_to_string(*v), n),
                f.path);
  return static_cast<int32_t>(*id);
}

}  // namespace

namespace {

// llama.cpp's names for "this file has no vocabulary".
bool names_no_vocabulary(const std::string& model) { return model == "none" || model == "no_vocab"; }

}  // namespace

bool gguf_has_tokenizer(const GgufFile& file) {
  const std::string* model = file.get<std::string>("tokenizer.ggml.model");
  return file.find("tokenizer.ggml.model") != nullptr && !(model && names_no_vocabulary(*model));
}

namespace {

// tokenizer.ggml.model, which must name a vocabulary.
std::string tokenizer_model(const GgufFile& f) {
  const std::string* model = f.get<std::string>("tokenizer.ggml.model");
  if (!model)
    throw Error(ErrorCode::TokenizerUnsupported,
                f.find("tokenizer.ggml.model") ? "tokenizer.ggml.model is not a string"
                                               : "no tokenizer: tokenizer.ggml.model is missing",
                f.path);
  if (names_no_vocabulary(*model))
    throw Error(ErrorCode::TokenizerNotFound,
                fmt::format("no tokenizer: tokenizer.ggml.model is '{}' (written without a vocabulary); pass --tokenizer",
                            *model),
                f.path);
  if (*model != "llama" && *model != "gpt2")
    throw Error(ErrorCode::TokenizerUnsupported,
                fmt::format("tokenizer.ggml.model is '{}'; only 'llama' (SentencePiece-style) and 'gpt2' (byte-level BPE) "
                            "tokenizers are supported",
                            *model),
                f.path);
  return *model;
}

void require_model(const GgufFile& f, std::string_view wanted) {
  if (const std::string model = tokenizer_model(f); model != wanted)
    throw Error(ErrorCode::TokenizerUnsupported,
                fmt::format("tokenizer.ggml.model is '{}', not '{}'", model, wanted), f.path);
}

std::vector<std::string> tokens(const GgufFile& f) {
  std::vector<std::string> pieces = *typed_array<std::string>(f, "tokenizer.ggml.tokens", "STRING", true);
  if (pieces.empty()) throw Error(ErrorCode::TokenizerInvalid, "tokenizer.ggml.tokens is empty", f.path);
  return pieces;
}

void check_size(const GgufFile& f, std::string_view key, size_t size, size_t n) {
  if (size != n)
    throw Error(ErrorCode::TokenizerInvalid, fmt::format("{} has {} elements for {} tokens", key, size, n), f.path);
}

// tokenizer.ggml.token_type (all normal when absent), numbered as llama.cpp numbers them.
std::vector<TokenType> token_types(const GgufFile& f, size_t n) {
  const auto* types = typed_array<int32_t>(f, "tokenizer.ggml.token_type", "INT32", false);
  if (!types) return std::vector<TokenType>(n, TokenType::Normal);
  check_size(f, "tokenizer.ggml.token_type", types->size(), n);
  std::vector<TokenType> out;
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = (*types)[i];
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte))
      throw Error(ErrorCode::TokenizerInvalid, fmt::format("tokenizer.ggml.token_type[{}] is {}, outside 0..6", i, t), f.path);
    out.push_back(static_cast<TokenType>(t));
  }
  return out;
}

std::optional<bool> flag(const GgufFile& f, std::string_view key) {
  const GgufValue* p = f.find(key);
  if (!p) return std::nullopt;
  const bool* b = std::get_if<bool>(p);
  if (!b)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} is {}, not a BOOL", key, gguf_type_name(gguf_value_type(*p))), f.path);
  return *b;
}

}  // namespace

ScoredVocab gguf_scored_vocab(const GgufFile& f) {
  require_model(f, "llama");
  ScoredVocab v;
  v.pieces = tokens(f);
  const size_t n = v.pieces.size();
  if (const auto* scores = typed_array<float>(f, "tokenizer.ggml.scores", "FLOAT32", false)) {
    check_size(f, "tokenizer.ggml.scores", scores->size(), n);
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite((*scores)[i]))
        throw Error(ErrorCode::TokenizerInvalid,
                    fmt::format("tokenizer.ggml.scores[{}] is {}; scores must be finite", i, (*scores)[i]), f.path);
    v.scores = *scores;
  } else {
    v.scores.assign(n, 0.0f);
  }
  v.types = token_types(f, n);
  v.bos = special_id(f, "tokenizer.ggml.bos_token_id", 1, n);
  v.eos = special_id(f, "tokenizer.ggml.eos_token_id", 2, n);
  v.unk = special_id(f, "tokenizer.ggml.unknown_token_id", 0, n);
  v.add_space_prefix = flag(f, "tokenizer.ggml.add_space_prefix").value_or(true);
  return v;
}

GgufMetadata scored_vocab_to_gguf(const ScoredVocab& v) {
  std::vector<int32_t> types;
  for (TokenType t : v.types) types.push_back(static_cast<int32_t>(t));
  GgufMetadata m = {
      {"tokenizer.ggml.model", std::string("llama")},
      {"tokenizer.ggml.tokens", GgufArray{v.pieces}},
      {"tokenizer.ggml.scores", GgufArray{v.scores}},
      {"tokenizer.ggml.token_type", GgufArray{std::move(types)}},
      {"tokenizer.ggml.add_space_prefix", v.add_space_prefix},
  };
  // A SentencePiece model may disable a special token (id -1): the key is then left out.
  if (v.bos >= 0) m["tokenizer.ggml.bos_token_id"] = static_cast<uint32_t>(v.bos);
  if (v.eos >= 0) m["tokenizer.ggml.eos_token_id"] = static_cast<uint32_t>(v.eos);
  if (v.unk >= 0) m["tokenizer.ggml.unknown_token_id"] = static_cast<uint32_t>(v.unk);
  return m;
}

std::unique_ptr<Tokenizer> make_scored_vocab_tokenizer(ScoredVocab vocab, std::string origin) {
  return std::make_unique<ScoredVocabTokenizer>(std::move(vocab), std::move(origin));
}

namespace {

// tokenizer.ggml.merges: "left right", split at the first space after the first byte as llama.cpp
// splits them (a part may be a lone space only on the left).
std::vector<RankedMerge> gguf_merges(const GgufFile& f, const BpeMerger& model) {
  const auto& lines = *typed_array<std::string>(f, "tokenizer.ggml.merges", "STRING", true);
  std::vector<RankedMerge> merges;
  merges.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const size_t space = line.find(' ', 1);
    auto bad = [&](std::string_view why) {
      return Error(ErrorCode::TokenizerInvalid, fmt::format("tokenizer.ggml.merges[{}] '{}' {}", i, line, why), f.path);
    };
    if (space == std::string::npos) throw bad("is not two pieces separated by a space");
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const int32_t l = model.find(left), r = model.find(right), result = model.find(left + right);
    if (l < 0 || r < 0) throw bad(fmt::format("names a piece that is no token ('{}')", l < 0 ? left : right));
    if (result < 0) throw bad(fmt::format("makes '{}', which is no token", left + right));
    merges.push_back({l, r, result});
  }
  return merges;
}

}  // namespace

ByteLevelBpeVocab gguf_byte_level_vocab(const GgufFile& f) {
  require_model(f, "gpt2");
  ByteLevelBpeVocab v;
  v.pieces = tokens(f);
  const size_t n = v.pieces.size();
  const std::vector<TokenType> types = token_types(f, n);
  const std::string* pre = f.get<std::string>("tokenizer.ggml.pre");
  const NamedPreTokenizer* named = pre ? named_pre_tokenizer(*pre) : nullptr;
  if (!named)
    throw Error(ErrorCode::TokenizerUnsupported,
                fmt::format("tokenizer.ggml.pre is {}; the byte-level pre-tokenizers supported are {}",
                            pre ? fmt::format("'{}'", *pre) : std::string("missing"), named_pre_tokenizers()),
                f.path);
  v.pre = named->rules;
  v.ignore_merges = named->ignore_merges;
  v.nfc = named->nfc;
  v.present.assign(n, true);
  v.in_model.assign(n, true);
  // llama.cpp matches control and user-defined tokens in the text before its BPE, as tokenizers
  // matches added tokens; its text is never normalized.
  for (size_t i = 0; i < n; ++i)
    if (types[i] == TokenType::Control || types[i] == TokenType::UserDefined) {
      v.added.push_back({static_cast<int32_t>(i), v.pieces[i], types[i] == TokenType::Control, false});
      v.in_model[i] = false;
    }
  v.merges = gguf_merges(f, BpeMerger(v.pieces, [&](int32_t id) { return bool(v.in_model[id]); }, {}));
  v.bos = special_id(f, "tokenizer.ggml.bos_token_id", -1, n);
  v.eos = special_id(f, "tokenizer.ggml.eos_token_id", -1, n);
  v.unk = special_id(f, "tokenizer.ggml.unknown_token_id", -1, n);
  if (flag(f, "tokenizer.ggml.add_bos_token").value_or(named->add_bos) && v.bos >= 0) v.prefix = {v.bos};
  if (flag(f, "tokenizer.ggml.add_eos_token").value_or(false) && v.eos >= 0) v.suffix = {v.eos};
  return v;
}

std::unique_ptr<Tokenizer> open_gguf_tokenizer(const GgufFile& f) {
  if (tokenizer_model(f) == "gpt2") return make_byte_level_bpe_tokenizer(gguf_byte_level_vocab(f), "gguf", f.path);
  return make_scored_vocab_tokenizer(gguf_scored_vocab(f), f.path);
}

GgufMetadata gguf_tokenizer_metadata(const GgufFile& f) {
  if (tokenizer_model(f) == "gpt2") return byte_level_vocab_to_gguf(gguf_byte_level_vocab(f), f.path);
  return scored_vocab_to_gguf(gguf_scored_vocab(f));
}

}  // namespace wl::tok
