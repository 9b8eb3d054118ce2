// The hyperparameters of a Llama-family model, read from the checkpoint itself: a Hugging Face
// config.json (Llama, Mistral and Qwen2 fields), GGUF `llama.*` metadata, or a llama2.c header.
#pragma once

#include <cstdint>
#include <string>

#include "weightloader/source.hpp"
#include "weightloader/export.hpp"

namespace wl {

struct WL_API LlamaConfig {
  uint64_t hidden_size = 0;
  uint64_t intermediate_size = 0;
  uint64_t num_layers = 0;
  uint64_t num_heads = 0;
  uint64_t num_kv_heads = 0;
  uint64_t head_dim = 0;
  uint64_t vocab_size = 0;
  uint64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;   // q/k/v projections have biases (Llama attention_bias, Qwen2)
  bool o_bias = false;     // the output projection has a bias (Llama attention_bias)
  bool mlp_bias = false;   // gate/up/down projections have biases (Llama mlp_bias)
  std::string origin;      // where it was read from: "config.json", "gguf" or "llama2c"

  uint64_t q_dim() const { return num_heads * head_dim; }
  uint64_t kv_dim() const { return num_kv_heads * head_dim; }
  // A Hugging Face config.json (LlamaForCausalLM) describing this model, for converted checkpoints.
  std::string to_hf_config_json() const;
  bool operator==(const LlamaConfig&) const = default;
};

// Reads the configuration from `source`'s metadata (config.json first, then GGUF keys, then the
// llama2.c header); a missing vocab_size comes from the embedding's rows, and a missing lm_head
// tensor means tied embeddings. ConfigMissing when there is none; ConfigInvalid naming the field
// when a field is missing, malformed, inconsistent, or something the engine cannot run.
WL_API LlamaConfig llama_config_from_source(const WeightSource& source);

// Parses a Hugging Face config.json text (`file` names it in errors).
WL_API LlamaConfig llama_config_from_hf_json(const std::string& text, const std::string& file);

}  // namespace wl
