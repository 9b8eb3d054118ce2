// What the SentencePiece-style tokenizers share: token types, the vocabulary GGUF stores, and the
// spelling of spaces, bytes and unknown tokens in pieces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wl::tok {

inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";      // U+2581 "▁": a space inside a piece
// Tokenizer files larger than this are refused before they are read (a 128k-token vocabulary
// takes ~2 MB).
inline constexpr uint64_t kTokenizerFileMaxBytes = 64ull << 20;

inline constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ": how SentencePiece decodes <unk>

// Token types, numbered as llama.cpp (and GGUF's tokenizer.ggml.token_type) number them.
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// A SentencePiece-style vocabulary (what GGUF's tokenizer.ggml.* holds).
struct ScoredVocab {
  std::vector<std::string> pieces;  // spaces as U+2581 "▁"
  std::vector<float> scores;
  std::vector<TokenType> types;
  int32_t bos = 1, eos = 2, unk = 0;
  bool add_space_prefix = true;
};

// The byte a "<0xNN>" piece stands for (two hex digits, either case); nullopt for other pieces.
std::optional<uint8_t> byte_piece_value(std::string_view piece);

// `text` with every ' ' written as U+2581, and the reverse.
std::string spaces_to_symbol(std::string_view text);
std::string symbol_to_spaces(std::string_view piece);

}  // namespace wl::tok
