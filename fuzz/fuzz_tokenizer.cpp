// Tokenizer files found by content (llama2.c tokenizer, GGUF-embedded tokenizer.ggml.*, SentencePiece
// model), then an encode of awkward text and the decoding of what it gave and of the first ids.
#include <algorithm>

#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/engine/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::unique_ptr<wl::Tokenizer> tok = wl::open_tokenizer(*wl::fuzz::source(data, size));
    const std::vector<int32_t> ids = tok->encode("Once upon a time, \xc3\xbc \xe6\xbc\xa2\n\t<0x0A>  \xff", true);
    int32_t prev = tok->bos_id();
    for (int32_t id : ids) {
      tok->decode(prev, id);
      prev = id;
    }
    for (size_t i = 0; i < std::min<size_t>(tok->vocab_size(), 64); ++i) tok->decode(prev, int32_t(i));
  } catch (const wl::Error&) {
  }
  return 0;
}
