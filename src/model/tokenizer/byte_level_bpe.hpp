// Byte-level BPE, what GPT-2, Llama 3 and Qwen2 ship: added tokens cut out of the text first
// (longest first, as Hugging Face's tokenizers matches them), optional NFC, the pre-tokenizer's
// words, each word's bytes in GPT-2's byte alphabet, then ranked merges. One tokenizer behind both
// front ends: tokenizer.json (hf_tokenizer_json) and GGUF's tokenizer.ggml.model "gpt2".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/tokenizer/bpe_merge.hpp"
#include "model/tokenizer/pre_tokenizer.hpp"
#include "weightloader/engine/tokenizer.hpp"
#include "weightloader/formats/gguf.hpp"

namespace wl::tok {

// A token matched in the text as it is, before pre-tokenization.
struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;     // a control token (GGUF type 3); else user-defined (type 4)
  bool normalized = false;  // matched in the normalized text; else in the text as given
};

struct ByteLevelBpeVocab {
  std::vector<std::string> pieces;  // by id: the model's pieces in the byte alphabet, added tokens' contents
  std::vector<bool> in_model;       // the id is a piece of the BPE model (merges make and split only those)
  std::vector<bool> present;        // the id names a token at all (tokenizer.json may leave ids out)
  std::vector<RankedMerge> merges;  // in rank order
  std::vector<AddedToken> added;
  PreTokenization pre;
  bool nfc = false;            // normalizer NFC
  bool ignore_merges = false;  // a word that is a piece is that piece
  bool byte_fallback = false;  // a symbol that is no piece becomes its bytes' "<0xNN>" pieces
  bool fuse_unk = false;       // a run of unknown symbols in a word is one unknown token
  int32_t unk = -1, bos = -1, eos = -1;
  std::vector<int32_t> prefix, suffix;  // what encode(add_bos = true) puts around the text
};

// `kind` is what Tokenizer::kind() says ("tokenizer.json", "gguf"); `origin` names the file in
// errors. TokenizerUnsupported when a pre-tokenizer regex does not compile.
std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(ByteLevelBpeVocab vocab, std::string kind, std::string origin);

// tokenizer.ggml.* with model "gpt2", as llama.cpp's converter writes it: tokens, token_type
// (1 normal, 3 control for special added tokens, 4 user-defined for the others), merges as
// "left right", the pre-tokenizer's name, BOS/EOS ids and add_bos_token / add_eos_token.
// TokenizerUnsupported (naming `origin`) for what GGUF cannot say: rules no llama.cpp
// pre-tokenizer name stands for, byte fallback, a post-processor other than [BOS] A [EOS], a merge
// part with a space; TokenizerInvalid for an id without a token.
GgufMetadata byte_level_vocab_to_gguf(const ByteLevelBpeVocab& vocab, const std::string& origin);

}  // namespace wl::tok
