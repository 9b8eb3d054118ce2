// Opening a tokenizer by content, and finding the one that goes with a model.
#include "weightloader/engine/tokenizer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "model/tokenizer/gguf_tokenizer.hpp"
#include "model/tokenizer/hf_tokenizer_json.hpp"
#include "model/tokenizer/llama2c_tokenizer.hpp"
#include "model/tokenizer/sentencepiece_tokenizer.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

enum class TokenizerFile { Gguf, Json, MaybeSentencePiece, Other };

TokenizerFile sniff(const ByteSource& file) {
  char head[4] = {};
  const uint64_t n = file.read_up_to(0, head, sizeof head);
  if (n == 4 && std::string_view(head, 4) == "GGUF") return TokenizerFile::Gguf;
  // tokenizer.json: an object. (A llama2.c file whose max_token_length is 123 would start with '{'
  // too; no real one does.)
  if (n >= 1 && head[0] == '{') return TokenizerFile::Json;
  // A ModelProto starts with its first piece: field 1, length-delimited (tag byte 0x0A).
  if (n >= 1 && head[0] == 0x0A) return TokenizerFile::MaybeSentencePiece;
  return TokenizerFile::Other;
}

bool gguf_embeds_tokenizer(const ByteSource& file) {
  return sniff(file) == TokenizerFile::Gguf && tok::gguf_has_tokenizer(read_gguf(file));
}

tok::ByteLevelBpeVocab read_tokenizer_json(const ByteSource& file) {
  if (file.size() > tok::kTokenizerFileMaxBytes)
    throw Error(ErrorCode::TokenizerInvalid,
                fmt::format("{} bytes is more than a tokenizer.json may have ({})", file.size(), tok::kTokenizerFileMaxBytes),
                file.name());
  return tok::parse_tokenizer_json(file.read_string(0, file.size()), file.name());
}

// The vocabulary of a llama2.c file or a SentencePiece model (the two a tokenizer.ggml.* block is
// made from), chosen by content as open_tokenizer chooses.
template <typename Llama2c, typename SentencePiece>
auto by_content(const ByteSource& file, Llama2c llama2c, SentencePiece sentencepiece) {
  if (sniff(file) == TokenizerFile::MaybeSentencePiece) {
    // A llama2.c file whose max_token_length is 10 starts with 0x0A too: try both, report both.
    try {
      return sentencepiece(file);
    } catch (const Error& sp_error) {
      try {
        return llama2c(file);
      } catch (const Error& l2c_error) {
        throw Error(l2c_error.code(),
                    fmt::format("neither a SentencePiece model ({}) nor a llama2.c tokenizer ({})",
                                sp_error.message(), l2c_error.message()),
                    file.name());
      }
    }
  }
  return llama2c(file);
}

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer(const ByteSource& file) {
  switch (sniff(file)) {
    case TokenizerFile::Gguf:
      return tok::open_gguf_tokenizer(read_gguf(file));
    case TokenizerFile::Json:
      return tok::make_byte_level_bpe_tokenizer(read_tokenizer_json(file), "tokenizer.json", file.name());
    default:
      break;
  }
  return by_content(
      file, [](const ByteSource& f) { return tok::make_llama2c_tokenizer(tok::read_llama2c_vocab(f)); },
      tok::open_sentencepiece_tokenizer);
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const Opener& opener) {
  if (opener.is_directory(path)) throw Error(ErrorCode::InvalidArgument, "a tokenizer is a file; this is a directory", path);
  return open_tokenizer(*opener.open(path));
}

GgufMetadata tokenizer_gguf_metadata(const std::string& path, const Opener& opener) {
  const std::shared_ptr<ByteSource> file = opener.open(path);
  if (sniff(*file) == TokenizerFile::Gguf) return tok::gguf_tokenizer_metadata(read_gguf(*file));
  if (sniff(*file) == TokenizerFile::Json) return tok::byte_level_vocab_to_gguf(read_tokenizer_json(*file), file->name());
  return tok::scored_vocab_to_gguf(by_content(
      *file, [](const ByteSource& f) { return tok::llama2c_to_scored_vocab(tok::read_llama2c_vocab(f)); },
      tok::sentencepiece_scored_vocab));
}

std::string find_tokenizer_path(const std::string& model_path, const Opener& opener) {
  auto file_in = [&](const std::string& dir, const char* name) -> std::string {
    const std::string p = opener.join(dir, name);
    return opener.exists(p) && !opener.is_directory(p) ? p : std::string();
  };
  // tokenizer.model before tokenizer.json: a Llama 2 folder has both, and SentencePiece runs the first.
  static constexpr const char* kBeside[] = {"tokenizer.model", "tokenizer.json", "tokenizer.bin"};
  if (opener.is_directory(model_path)) {
    for (const char* name : kBeside)
      if (auto p = file_in(model_path, name); !p.empty()) return p;
    for (const std::string& f : opener.list(model_path))
      if (f.ends_with(".gguf") && gguf_embeds_tokenizer(*opener.open(f))) return f;
    return {};
  }
  if (!opener.exists(model_path)) return {};
  if (gguf_embeds_tokenizer(*opener.open(model_path))) return model_path;
  const std::string dir = opener.parent(model_path);
  for (const char* name : kBeside)
    if (auto p = file_in(dir, name); !p.empty()) return p;
  for (const std::string& f : opener.list(dir)) {
    const std::string name = base_name(f);
    if (name.starts_with("tok") && name.ends_with(".bin") && name != base_name(model_path)) return f;
  }
  return {};
}

std::unique_ptr<Tokenizer> find_tokenizer(const std::string& model_path, const Opener& opener) {
  const std::string path = find_tokenizer_path(model_path, opener);
  return path.empty() ? nullptr : open_tokenizer(path, opener);
}

}  // namespace wl
