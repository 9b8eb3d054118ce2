// The tokenizer GGUF files embed (tokenizer.ggml.*), for tokenizer.ggml.model "llama": a
// SentencePiece-style vocabulary whose spaces are U+2581 "▁", with a leading "▁" added
// (tokenizer.ggml.add_space_prefix, default true) and byte fallback through "<0xNN>" tokens.
#pragma once

#include <memory>

#include "engine/tokenizer/pieces.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::tok {

// Whether the file carries tokenizer metadata at all (tokenizer.ggml.model).
bool gguf_has_tokenizer(const GgufFile& file);

// The vocabulary in `file`'s metadata. TokenizerUnsupported for a model other than "llama" or none;
// TokenizerInvalid for a missing tokens array, arrays of the wrong type or length, special ids
// outside the vocabulary, or token types outside 0..6. Errors name the file and the field.
ScoredVocab gguf_scored_vocab(const GgufFile& file);

// The metadata that stores `vocab` (model "llama"), as llama.cpp's converters write it.
GgufMetadata scored_vocab_to_gguf(const ScoredVocab& vocab);

// A tokenizer over a SentencePiece-style vocabulary (kind "gguf"); `origin` names it in errors.
std::unique_ptr<Tokenizer> make_scored_vocab_tokenizer(ScoredVocab vocab, std::string origin);

}  // namespace wl::tok
