#include "model/tokenizer/llama2c_tokenizer.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/tokenizer/bpe_merge.hpp"
#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

constexpr int32_t kBos = 1, kEos = 2, kByteOffset = 3;

class Llama2cTokenizer : public Tokenizer {
 public:
  explicit Llama2cTokenizer(Llama2cVocab v)
      : v_(std::move(v)), merger_(v_.pieces, v_.scores, [this](int32_t id) { return mergeable(id); }) {}

  std::string kind() const override { return "llama2c"; }
  size_t vocab_size() const override { return v_.pieces.size(); }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int32_t> ids;
    if (add_bos) ids.push_back(kBos);
    if (text.empty()) return ids;
    std::string s;
    s.reserve(text.size() + 1);
    s += ' ';  // run.c's dummy prefix
    s += text;
    merger_.encode(s, ids, [this](std::string_view bytes, std::vector<int32_t>& out) {
      for (unsigned char b : bytes) {
        if (b + kByteOffset >= static_cast<int>(v_.pieces.size()))
          throw Error(ErrorCode::TokenOutOfRange,
                      fmt::format("byte 0x{:02X} is no piece and its fallback token {} is outside the {} tokens", b,
                                  b + kByteOffset, v_.pieces.size()),
                      v_.path);
        out.push_back(b + kByteOffset);
      }
    });
    return ids;
  }

  std::string decode(int32_t prev, int32_t token) const override {
    if (token < 0 || static_cast<size_t>(token) >= v_.pieces.size())
      throw Error(ErrorCode::TokenOutOfRange,
                  fmt::format("token {} is outside the vocabulary of {} tokens", token, v_.pieces.size()), v_.path);
    std::string_view piece = v_.pieces[token];
    if (prev == kBos && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    if (auto b = byte_piece_value(piece)) return std::string(1, static_cast<char>(*b));
    return std::string(piece);
  }

 private:
  // Merges never produce <unk>, BOS, EOS or byte tokens (SentencePiece reserves them; run.c
  // would look them up too, but their texts "<unk>", "\n<s>\n", "<0xNN>" are no merge of real text).
  bool mergeable(int32_t id) const {
    return id > kEos && !(id < kByteOffset + 256 && byte_piece_value(v_.pieces[id]));
  }

  Llama2cVocab v_;
  BpeMerger merger_;
};

}  // namespace

Llama2cVocab read_llama2c_vocab(const ByteSource& file) {
  const std::string& path = file.name();
  if (file.size() > kTokenizerFileMaxBytes)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} bytes is more than a llama2.c tokenizer file may have ({})", file.size(),
                            kTokenizerFileMaxBytes),
                path);
  const std::string bytes = file.read_string(0, file.size());
  Llama2cVocab v;
  v.path = path;
  size_t pos = 0;
  auto take = [&](void* dst, size_t n, const std::string& what) {
    if (bytes.size() - pos < n)
      throw Error(ErrorCode::Truncated,
                  fmt::format("the file ends inside {} ({} bytes needed at offset {}, {} left)", what, n, pos,
                              bytes.size() - pos),
                  path);
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  take(&v.max_token_length, 4, "max_token_length");
  if (v.max_token_length <= 0)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("max_token_length is {}; it must be positive", v.max_token_length), path);
  while (pos < bytes.size()) {
    const size_t i = v.pieces.size();
    float score;
    int32_t len;
    take(&score, 4, fmt::format("the score of token {}", i));
    take(&len, 4, fmt::format("the length of token {}", i));
    if (!std::isfinite(score))
      throw Error(ErrorCode::TokenizerInvalid, fmt::format("token {} has the score {}; scores must be finite", i, score),
                  path);
    if (len < 0 || len > v.max_token_length)
      throw Error(ErrorCode::TokenizerInvalid,
                  fmt::format("token {} has length {}, outside 0..max_token_length ({})", i, len, v.max_token_length),
                  path);
    // Checked before allocating: a length the file cannot hold must not become an allocation.
    if (bytes.size() - pos < size_t(len))
      throw Error(ErrorCode::Truncated,
                  fmt::format("the file ends inside the {} bytes of token {} (offset {}, {} left)", len, i, pos,
                              bytes.size() - pos),
                  path);
    std::string piece(bytes.data() + pos, static_cast<size_t>(len));
    pos += size_t(len);
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
  }
  if (v.pieces.size() <= kEos)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} tokens; a llama2.c tokenizer has at least <unk>, BOS and EOS", v.pieces.size()), path);
  return v;
}

ScoredVocab llama2c_to_scored_vocab(const Llama2cVocab& v) {
  ScoredVocab s;
  s.scores = v.scores;
  s.bos = kBos;
  s.eos = kEos;
  s.unk = 0;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const std::string& p = v.pieces[i];
    std::string piece;
    TokenType type = TokenType::Normal;
    if (i == 0) {
      piece = "<unk>", type = TokenType::Unknown;
    } else if (i == kBos) {
      piece = "<s>", type = TokenType::Control;
    } else if (i == kEos) {
      piece = "</s>", type = TokenType::Control;
    } else if (p.empty()) {
      type = TokenType::Control;
    } else if (byte_piece_value(p)) {
      piece = p, type = TokenType::Byte;
    } else {
      piece = spaces_to_symbol(p);
    }
    s.pieces.push_back(std::move(piece));
    s.types.push_back(type);
  }
  return s;
}

std::unique_ptr<Tokenizer> make_llama2c_tokenizer(Llama2cVocab vocab) {
  return std::make_unique<Llama2cTokenizer>(std::move(vocab));
}

}  // namespace wl::tok
