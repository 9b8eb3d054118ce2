// Tokenizers for the LLM engine: llama2.c's tokenizer file, the SentencePiece-style tokenizer
// embedded in GGUF files (tokenizer.ggml.*), and SentencePiece models (tokenizer.model) through
// libsentencepiece.
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
  virtual std::string kind() const = 0;  // "llama2c", "gguf", "sentencepiece"
  virtual size_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  // Token ids of `text`, with BOS first when add_bos (llama2.c run.c semantics: a dummy-prefix space
  // when text is non-empty, UTF-8 code points looked up, unknown bytes as byte-fallback tokens, then
  // pairs merged by best score, the leftmost pair on ties).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos) const = 0;
  // The bytes `token` prints as when it follows `prev` (run.c's decode: a leading space dropped right
  // after BOS; a "<0xNN>" piece is that byte). Bytes, not necessarily whole UTF-8 characters.
  // TokenOutOfRange for a token outside the vocabulary.
  virtual std::string decode(int32_t prev, int32_t token) const = 0;
};

// By content: a llama2.c tokenizer file (vocab size = entries in the file), a GGUF file with
// tokenizer.ggml.* metadata, or a SentencePiece model (tokenizer.model). Clear wl::Error otherwise.
WL_API std::unique_ptr<Tokenizer> open_tokenizer(const ByteSource& file);
WL_API std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const Opener& opener = *default_opener());

// The tokenizer that goes with a model path: for a directory, tokenizer.model, then tokenizer.bin, then
// an embedded GGUF tokenizer of a .gguf file in it; for a file, the GGUF file itself if it embeds one,
// else tokenizer.model / tokenizer.bin / tok*.bin beside it. nullptr when none is found.
// Files are found through `opener`.
WL_API std::unique_ptr<Tokenizer> find_tokenizer(const std::string& model_path, const Opener& opener = *default_opener());
// The path find_tokenizer opens; empty when none is found.
WL_API std::string find_tokenizer_path(const std::string& model_path, const Opener& opener = *default_opener());

// The tokenizer.ggml.* metadata (model "llama": tokens with spaces as U+2581, scores, token_type
// numbered as llama.cpp does, bos/eos/unknown ids) for the tokenizer at `path`, as conversion to GGUF
// embeds it. Spaces of a llama2.c file become U+2581; its tokens 0, 1, 2 become <unk>, <s>, </s>.
WL_API GgufMetadata tokenizer_gguf_metadata(const std::string& path, const Opener& opener = *default_opener());

}  // namespace wl
