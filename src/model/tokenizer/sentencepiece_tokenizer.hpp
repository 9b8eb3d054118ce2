// SentencePiece models (a Hugging Face directory's tokenizer.model) through libsentencepiece:
// encoding is SentencePiece's own (normalisation included); decode follows run.c's per-token rule.
#pragma once

#include <memory>
#include <string>

#include "model/tokenizer/pieces.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::tok {

// TokenizerInvalid (with libsentencepiece's reason) when `file` is no SentencePiece model.
std::unique_ptr<Tokenizer> open_sentencepiece_tokenizer(const ByteSource& file);

// The model's vocabulary for GGUF (user-defined pieces, which libsentencepiece does not report,
// come out normal). add_space_prefix is true, as for Llama's models.
ScoredVocab sentencepiece_scored_vocab(const ByteSource& file);

}  // namespace wl::tok
