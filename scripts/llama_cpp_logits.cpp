// For scripts/llama-cpp-check.sh: loads a GGUF file with llama.cpp's own loader, feeds it token ids
// (no tokenizer needed, so files written without a vocabulary run too) and prints the logits of
// the last position, one per line. Built against llama.cpp's library by that script, never by CMake.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf ID [ID ...]\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) {
    std::fprintf(stderr, "%s: llama.cpp could not load the model\n", argv[1]);
    return 1;
  }
  std::vector<llama_token> ids;
  for (int i = 2; i < argc; ++i) ids.push_back(std::atoi(argv[i]));
  llama_context_params params = llama_context_default_params();
  params.n_ctx = params.n_batch = static_cast<uint32_t>(ids.size() + 8);
  params.type_k = params.type_v = GGML_TYPE_F32;  // llama.cpp's default F16 cache would round the keys and values
#ifdef WL_LLAMA_FLASH_ATTN_TYPE
  // Newer llama.cpp (flash_attn_type) turns flash attention on where it can; on the CPU it rounds
  // the queries to F16.
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
#endif
  llama_context* ctx = llama_init_from_model(model, params);
  if (!ctx || llama_decode(ctx, llama_batch_get_one(ids.data(), static_cast<int32_t>(ids.size()))) != 0) {
    std::fprintf(stderr, "%s: llama.cpp could not evaluate the ids\n", argv[1]);
    return 1;
  }
  const float* logits = llama_get_logits_ith(ctx, -1);
  const int32_t n = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (int32_t i = 0; i < n; ++i) std::printf("%.8g\n", logits[i]);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
