// The Llama forward pass over tensor-parallel ranks held in one process. Each rank owns its slice
// of every weight (declared by tensor_parallel.hpp) and its part of the KV cache; after the
// row-parallel products the ranks' partial sums are all-reduced (added in rank order, so a run
// is deterministic). Weights are read in their stored dtype and computed in F32.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/tensor_parallel.hpp"
#include "engine/thread_pool.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/model.hpp"

namespace wl {

class LlamaEngine {
 public:
  LlamaEngine(const LlamaConfig& config, unsigned tensor_parallel_size, DType dtype, unsigned threads);
  ~LlamaEngine();

  const LlamaConfig& config() const noexcept { return config_; }
  unsigned ranks() const noexcept { return unsigned(ranks_.size()); }
  // Rank r's parameters, to be loaded before the first forward().
  Model& rank_model(unsigned r);
  uint64_t parameter_bytes() const;

  // Empties the KV cache and makes room for `positions` positions (at most max_position_embeddings).
  void reset(uint64_t positions);
  // Feeds `token` at position `pos` (0, 1, 2, ... after reset) and returns the next-token logits.
  const std::vector<float>& forward(int32_t token, uint64_t pos);

 private:
  struct Rank;
  LlamaConfig config_;
  ThreadPool pool_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<float> x_, xb_, logits_;
  bool bound_ = false;
  uint64_t positions_ = 0;

  void bind();
};

}  // namespace wl
