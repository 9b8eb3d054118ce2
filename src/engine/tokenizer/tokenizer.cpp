// Opening a tokenizer by content, and finding the one that goes with a model.
#include "weightloader/tokenizer.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/file.hpp"
#include "engine/tokenizer/gguf_tokenizer.hpp"
#include "engine/tokenizer/llama2c_tokenizer.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

enum class TokenizerFile { Gguf, MaybeSentencePiece, Other };

TokenizerFile sniff(const std::string& path) {
  File file(path);
  char head[4] = {};
  const uint64_t n = file.read_some(0, head, sizeof head);
  if (n == 4 && std::string_view(head, 4) == "GGUF") return TokenizerFile::Gguf;
  // A ModelProto starts with its first piece: field 1, length-delimited (tag byte 0x0A).
  if (n >= 1 && head[0] == 0x0A) return TokenizerFile::MaybeSentencePiece;
  return TokenizerFile::Other;
}

bool gguf_embeds_tokenizer(const std::string& path) {
  return sniff(path) == TokenizerFile::Gguf && tok::gguf_has_tokenizer(read_gguf(path));
}

// The vocabulary of a llama2.c file or a SentencePiece model (the two a tokenizer.ggml.* block is
// made from), chosen by content as open_tokenizer chooses.
template <typename Llama2c, typename SentencePiece>
auto by_content(const std::string& path, Llama2c llama2c, SentencePiece sentencepiece) {
  if (sniff(path) == TokenizerFile::MaybeSentencePiece) {
    // A llama2.c file whose max_token_length is 10 starts with 0x0A too: try both, report both.
    try {
      return sentencepiece(path);
    } catch (const Error& sp_error) {
      try {
        return llama2c(path);
      } catch (const Error& l2c_error) {
        throw Error(l2c_error.code(),
                    fmt::format("neither a SentencePiece model ({}) nor a llama2.c tokenizer ({})",
                                sp_error.message(), l2c_error.message()),
                    path);
      }
    }
  }
  return llama2c(path);
}

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  if (fs::is_directory(path))
    throw Error(ErrorCode::InvalidArgument, "a tokenizer is a file; this is a directory", path);
  if (sniff(path) == TokenizerFile::Gguf) {
    const GgufFile gguf = read_gguf(path);
    return tok::make_scored_vocab_tokenizer(tok::gguf_scored_vocab(gguf), path);
  }
  return by_content(
      path, [](const std::string& p) { return tok::make_llama2c_tokenizer(tok::read_llama2c_vocab(p)); },
      tok::open_sentencepiece_tokenizer);
}

GgufMetadata tokenizer_gguf_metadata(const std::string& path) {
  if (sniff(path) == TokenizerFile::Gguf) return tok::scored_vocab_to_gguf(tok::gguf_scored_vocab(read_gguf(path)));
  return tok::scored_vocab_to_gguf(by_content(
      path, [](const std::string& p) { return tok::llama2c_to_scored_vocab(tok::read_llama2c_vocab(p)); },
      tok::sentencepiece_scored_vocab));
}

std::string find_tokenizer_path(const std::string& model_path) {
  std::error_code ec;
  auto file_in = [&](const fs::path& dir, const std::string& name) -> std::string {
    const fs::path p = dir / name;
    return fs::is_regular_file(p, ec) ? p.string() : std::string();
  };
  auto sorted_files = [&](const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file(ec)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  };
  if (fs::is_directory(model_path, ec)) {
    for (const char* name : {"tokenizer.model", "tokenizer.bin"})
      if (auto p = file_in(model_path, name); !p.empty()) return p;
    for (const fs::path& f : sorted_files(model_path))
      if (f.extension() == ".gguf" && gguf_embeds_tokenizer(f.string())) return f.string();
    return {};
  }
  if (!fs::is_regular_file(model_path, ec)) return {};
  if (gguf_embeds_tokenizer(model_path)) return model_path;
  const fs::path dir = fs::path(model_path).parent_path().empty() ? fs::path(".") : fs::path(model_path).parent_path();
  for (const char* name : {"tokenizer.model", "tokenizer.bin"})
    if (auto p = file_in(dir, name); !p.empty()) return p;
  for (const fs::path& f : sorted_files(dir)) {
    const std::string name = f.filename().string();
    if (name.starts_with("tok") && name.ends_with(".bin") && f != fs::path(model_path)) return f.string();
  }
  return {};
}

std::unique_ptr<Tokenizer> find_tokenizer(const std::string& model_path) {
  const std::string path = find_tokenizer_path(model_path);
  return path.empty() ? nullptr : open_tokenizer(path);
}

}  // namespace wl
