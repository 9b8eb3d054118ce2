// llama2.c's tokenizer file (tokenizer.bin, tok512.bin): int32 max_token_length, then per token
// f32 score, int32 byte length, bytes. Tokens 0, 1, 2 are <unk>, BOS and EOS; bytes fall back to
// token byte + 3, as run.c assumes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/tokenizer/pieces.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::tok {

struct Llama2cVocab {
  std::string path;
  int32_t max_token_length = 0;
  std::vector<std::string> pieces;  // spaces as ' ', as the file stores them
  std::vector<float> scores;
};

// Reads and validates a whole file: max_token_length positive; every length within
// 0..max_token_length and the bytes left; finite scores; at least the 3 special tokens. Errors
// (Truncated, TokenizerInvalid) name the file and the token index.
Llama2cVocab read_llama2c_vocab(const ByteSource& file);

// The vocabulary as GGUF stores it, by the rules of llama.cpp's convert-llama2c-to-ggml: ' ' -> '▁';
// 0 <unk> (unknown), 1 <s> and 2 </s> (control), empty pieces control, "<0xNN>" pieces byte.
ScoredVocab llama2c_to_scored_vocab(const Llama2cVocab& vocab);

std::unique_ptr<Tokenizer> make_llama2c_tokenizer(Llama2cVocab vocab);

}  // namespace wl::tok
