// The Llama forward pass of one tensor-parallel rank. The rank owns its slice of every weight
// (declared by tensor_parallel.hpp) and its part of the KV cache; it meets the other ranks only
// through its Communicator: the embedding row comes from the rank that owns it, the row-parallel
// products' partial sums are all-reduced, and the vocabulary slices of the logits are gathered.
// The same code runs whether the other ranks are threads of this process or other processes.
// Weights are read in their stored dtype and computed in F32.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor_parallel.hpp"
#include "engine/thread_pool.hpp"
#include "weightloader/engine/communicator.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/model.hpp"

namespace wl {

class LlamaEngine {
 public:
  // Rank comm.rank() of comm.size(); `comm` must outlive the engine. threads: this rank's
  // compute threads (0 = one per core).
  LlamaEngine(const LlamaConfig& config, Communicator& comm, DType dtype, unsigned threads);

  const LlamaConfig& config() const noexcept { return config_; }
  unsigned rank() const noexcept { return part_.rank; }
  Communicator& communicator() const noexcept { return comm_; }
  // This rank's parameters, to be loaded before the first forward().
  Model& model() noexcept { return model_; }

  // Empties the KV cache and makes room for `positions` positions (at most max_position_embeddings).
  void reset(uint64_t positions);
  // Feeds `token` at position `pos` (0, 1, 2, ... after reset) and returns the next-token logits,
  // the whole vocabulary's on every rank. Every rank calls it with the same arguments.
  const std::vector<float>& forward(int32_t token, uint64_t pos);

 private:
  struct Layer {
    const float *attn_norm, *ffn_norm, *qkv_bias = nullptr, *o_bias = nullptr, *gate_up_bias = nullptr, *down_bias = nullptr;
    const std::byte *qkv, *o, *gate_up, *down;
  };
  LlamaConfig config_;
  Communicator& comm_;
  RankPartition part_;
  std::vector<uint64_t> vocab_starts_;  // rank r's vocabulary rows begin at [r]; [size] = vocab_size
  Model model_;
  DType dtype_;
  ThreadPool pool_;
  std::vector<Layer> layers_;
  const std::byte* embed_ = nullptr;
  const std::byte* lm_head_ = nullptr;  // the embedding when tied
  const float* norm_ = nullptr;
  bool bound_ = false;
  uint64_t positions_ = 0;
  // Per-token activations and this rank's KV cache: [layer][position][kv_heads * head_dim].
  std::vector<float> x_, xb_, qkv_, att_, partial_, gate_up_, hidden_, k_cache_, v_cache_;
  std::vector<float> local_logits_, gathered_logits_, logits_;

  void bind();
  void attention(uint64_t layer, uint64_t pos);
  // x += the sum over ranks of partial_ (+ the row-parallel bias, which rank 0 alone holds).
  void add_all_reduced(const float* bias);
  void gather_logits();
};

}  // namespace wl
