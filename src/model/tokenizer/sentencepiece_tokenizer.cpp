#include "model/tokenizer/sentencepiece_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

std::unique_ptr<sentencepiece::SentencePieceProcessor> load(const ByteSource& file) {
  if (file.size() > kTokenizerFileMaxBytes)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} bytes is more than a SentencePiece model may have ({})", file.size(), kTokenizerFileMaxBytes),
                file.name());
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(file.read_string(0, file.size()));
  if (!status.ok())
    throw Error(ErrorCode::TokenizerInvalid, fmt::format("not a SentencePiece model: {}", status.ToString()), file.name());
  return sp;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::string path)
      : sp_(std::move(sp)), path_(std::move(path)) {}

  std::string kind() const override { return "sentencepiece"; }
  size_t vocab_size() const override { return static_cast<size_t>(sp_->GetPieceSize()); }
  int32_t bos_id() const override { return sp_->bos_id(); }  // -1 when the model has none
  int32_t eos_id() const override { return sp_->eos_id(); }

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int> pieces;
    const auto status = sp_->Encode(text, &pieces);
    if (!status.ok())
      throw Error(ErrorCode::InvalidArgument, fmt::format("SentencePiece could not encode: {}", status.ToString()), path_);
    std::vector<int32_t> ids;
    if (add_bos && bos_id() >= 0) ids.push_back(bos_id());
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    return ids;
  }

  std::string decode(int32_t prev, int32_t token) const override {
    if (token < 0 || token >= sp_->GetPieceSize())
      throw Error(ErrorCode::TokenOutOfRange,
                  fmt::format("token {} is outside the vocabulary of {} tokens", token, sp_->GetPieceSize()), path_);
    if (sp_->IsControl(token)) return {};
    if (sp_->IsUnknown(token)) return std::string(kUnknownSurface);
    const std::string& piece = sp_->IdToPiece(token);
    if (sp_->IsByte(token))
      if (auto b = byte_piece_value(piece)) return std::string(1, static_cast<char>(*b));
    std::string text = symbol_to_spaces(piece);
    if (prev == bos_id() && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
  }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
};

}  // namespace

std::unique_ptr<Tokenizer> open_sentencepiece_tokenizer(const ByteSource& file) {
  return std::make_unique<SentencePieceTokenizer>(load(file), file.name());
}

ScoredVocab sentencepiece_scored_vocab(const ByteSource& file) {
  const auto sp = load(file);
  ScoredVocab v;
  for (int i = 0; i < sp->GetPieceSize(); ++i) {
    v.pieces.push_back(sp->IdToPiece(i));
    v.scores.push_back(sp->GetScore(i));
    v.types.push_back(sp->IsUnknown(i)  ? TokenType::Unknown
                      : sp->IsControl(i) ? TokenType::Control
                      : sp->IsByte(i)    ? TokenType::Byte
                      : sp->IsUnused(i)  ? TokenType::Unused
                                         : TokenType::Normal);
  }
  v.bos = sp->bos_id();
  v.eos = sp->eos_id();
  v.unk = sp->unk_id();
  return v;
}

}  // namespace wl::tok
