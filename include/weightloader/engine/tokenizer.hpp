// Tokenizers for the LLM engine: llama2.c's tokenizer file, the tokenizers embedded in GGUF files
// (tokenizer.ggml.*: SentencePiece-style "llama" and byte-level BPE "gpt2"), SentencePiece models
// (tokenizer.model) through libsentencepiece, and Hugging Face's tokenizer.json with a byte-level
// BPE model (GPT-2, Llama 3, Qwen2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/export.hpp"

namespace wl {

class WL_API Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;  // "llama2c", "gguf", "sentencepiece", "tokenizer.json"
  virtual size_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when there is none (Qwen2's tokenizer.json)
  virtual int32_t eos_id() const = 0;
  // Token ids of `text`, with BOS first when add_bos (llama2.c run.c semantics: a dummy-prefix space
  // when text is non-empty, UTF-8 code points looked up, unknown bytes as byte-fallback tokens, then
  // pairs merged by best score, the leftmost pair on ties). Byte-level BPE follows Hugging Face's
  // tokenizers instead (added tokens, pre-tokenizer, ranked merges), and add_bos adds what its
  // post-processor (GGUF: add_bos_token / add_eos_token) puts around the text, if anything.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos) const = 0;
  // The bytes `token` prints as when it follows `prev` (run.c's decode: a leading space dropped right
  // after BOS; a "<0xNN>" piece is that byte; byte-level BPE: the piece's bytes, an added token's
  // text, nothing dropped). Bytes, not necessarily whole UTF-8 characters.
  // TokenOutOfRange for a token outside the vocabulary.
  virtual std::string decode(int32_t prev, int32_t token) const = 0;
};

// By content: a llama2.c tokenizer file (vocab size = entries in the file), a GGUF file with
// tokenizer.ggml.* metadata, a SentencePiece model (tokenizer.model), or a tokenizer.json (a JSON
// object). Clear wl::Error otherwise, naming the field for what tokenizer.json holds and we do not run.
WL_API std::unique_ptr<Tokenizer> open_tokenizer(const ByteSource& file);
WL_API std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const Opener& opener = *local_opener());

// The tokenizer that goes with a model path: for a directory, tokenizer.model, then tokenizer.json,
// then tokenizer.bin, then an embedded GGUF tokenizer of a .gguf file in it; for a file, the GGUF
// file itself if it embeds one, else tokenizer.model / tokenizer.json / tokenizer.bin / tok*.bin
// beside it. nullptr when none is found.
// Files are found through `opener`.
WL_API std::unique_ptr<Tokenizer> find_tokenizer(const std::string& model_path, const Opener& opener = *local_opener());
// The path find_tokenizer opens; empty when none is found.
WL_API std::string find_tokenizer_path(const std::string& model_path, const Opener& opener = *local_opener());

// The tokenizer.ggml.* metadata (model "llama": tokens with spaces as U+2581, scores, token_type
// numbered as llama.cpp does, bos/eos/unknown ids) for the tokenizer at `path`, as conversion to GGUF
// embeds it. Spaces of a llama2.c file become U+2581; its tokens 0, 1, 2 become <unk>, <s>, </s>.
// A tokenizer.json (or a GGUF "gpt2" vocabulary) becomes model "gpt2" with its merges and
// tokenizer.ggml.pre, as llama.cpp's converter writes it.
WL_API GgufMetadata tokenizer_gguf_metadata(const std::string& path, const Opener& opener = *local_opener());

}  // namespace wl
