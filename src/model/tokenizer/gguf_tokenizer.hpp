// The tokenizers GGUF files embed (tokenizer.ggml.*): for tokenizer.ggml.model "llama", a
// SentencePiece-style vocabulary whose spaces are U+2581 "▁", with a leading "▁" added
// (tokenizer.ggml.add_space_prefix, default true) and byte fallback through "<0xNN>" tokens; for
// "gpt2", byte-level BPE (tokens, merges, and tokenizer.ggml.pre naming the pre-tokenizer).
#pragma once

#include <memory>

#include "model/tokenizer/byte_level_bpe.hpp"
#include "model/tokenizer/pieces.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::tok {

// Whether the file carries tokenizer metadata at all (tokenizer.ggml.model).
bool gguf_has_tokenizer(const GgufFile& file);

// The tokenizer in `file`'s metadata, by tokenizer.ggml.model; TokenizerUnsupported for a model
// other than "llama" and "gpt2" or none, TokenizerNotFound for "none".
std::unique_ptr<Tokenizer> open_gguf_tokenizer(const GgufFile& file);
// The tokenizer.ggml.* block that stores it again (as conversion embeds it).
GgufMetadata gguf_tokenizer_metadata(const GgufFile& file);

// The "llama" vocabulary in `file`'s metadata. TokenizerUnsupported for another model or none;
// TokenizerInvalid for a missing tokens array, arrays of the wrong type or length, special ids
// outside the vocabulary, or token types outside 0..6. Errors name the file and the field.
ScoredVocab gguf_scored_vocab(const GgufFile& file);

// The "gpt2" vocabulary: TokenizerUnsupported for another model, or for tokenizer.ggml.pre missing or
// naming a pre-tokenizer not in pre_tokenizer.hpp's table; TokenizerInvalid for a merge whose parts
// or result are no tokens, and as above. Control and user-defined tokens are added tokens; BOS
// (EOS) goes around the text when tokenizer.ggml.add_bos_token (add_eos_token) says so, by default
// as llama.cpp decides from the pre-tokenizer's name.
ByteLevelBpeVocab gguf_byte_level_vocab(const GgufFile& file);

// The metadata that stores `vocab` (model "llama"), as llama.cpp's converters write it.
GgufMetadata scored_vocab_to_gguf(const ScoredVocab& vocab);

// A tokenizer over a SentencePiece-style vocabulary (kind "gguf"); `origin` names it in errors.
std::unique_ptr<Tokenizer> make_scored_vocab_tokenizer(ScoredVocab vocab, std::string origin);

}  // namespace wl::tok
