// Hugging Face's tokenizer.json (the tokenizers library's serialization) with a byte-level BPE
// model, as GPT-2, Llama 3 and 4, Qwen2 and 3, DeepSeek, gpt-oss and Falcon ship it. What is read, and what is refused by name:
// - model: type "BPE"; vocab; merges as "left right" strings or [left, right] pairs; unk_token,
//   fuse_unk, byte_fallback, ignore_merges; dropout, continuing_subword_prefix and
//   end_of_word_suffix only when they change nothing (null, 0, "").
// - normalizer: null, NFC, or a Sequence of those.
// - pre_tokenizer: ByteLevel, or a Sequence of one ByteLevel and, before or after it, Split (a Regex
//   or String pattern, behavior "Isolated" or "Contiguous", not inverted), Digits and Punctuation
//   (behavior "Isolated" or "Contiguous") steps.
// - added_tokens: id, content, special, normalized; single_word, lstrip and rstrip only false.
// - post_processor: null, ByteLevel, TemplateProcessing (its "single" template: special tokens
//   around $A), or a Sequence of those. decoder: ByteLevel (or a Sequence holding only ByteLevel).
// - truncation and padding: null.
#pragma once

#include <string_view>

#include "model/tokenizer/byte_level_bpe.hpp"

namespace wl::tok {

// TokenizerInvalid for a file that is not JSON or not tokenizer.json's structure (a vocab id twice,
// a merge whose parts or result are not in the vocab, an added token without an id);
// TokenizerUnsupported for a valid file with a part weightloader does not run. Errors name `origin`
// and the field ("pre_tokenizer.pretokenizers[0].behavior").
ByteLevelBpeVocab parse_tokenizer_json(std::string_view json, const std::string& origin);

}  // namespace wl::tok
