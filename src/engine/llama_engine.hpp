// The forward pass of one tensor-parallel rank, for every family LlamaConfig describes (biases,
// sliding windows, soft-caps, Gemma's norms, partial rotary, experts, latent attention, attention sinks,
// Llama 4's chunked attention, q/k L2 norm and temperature tuning). The rank owns its slice of every weight
// (declared by tensor_parallel.hpp) and its part of the KV cache; it meets the other ranks only
// through its Communicator: the embedding row comes from the rank that owns it, the row-parallel
// products' partial sums are all-reduced, and the vocabulary slices of the logits are gathered.
// The same code runs whether the other ranks are threads of this process or other processes.
// Weights are read in their stored dtype and computed in F32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/stacked_experts.hpp"
#include "engine/tensor_parallel.hpp"
#include "engine/thread_pool.hpp"
#include "weightloader/communicator.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/model.hpp"

namespace wl {

class LlamaEngine {
 public:
  // Rank comm.rank() of comm.size(); `comm` must outlive the engine. threads: this rank's
  // compute threads (0 = one per core). expert_parallel: whole experts per rank (tensor_parallel.hpp).
  LlamaEngine(const LlamaConfig& config, Communicator& comm, DType dtype, unsigned threads, bool expert_parallel = false);

  const LlamaConfig& config() const noexcept { return config_; }
  unsigned rank() const noexcept { return part_.rank; }
  const RankPartition& partition() const noexcept { return part_; }
  Communicator& communicator() const noexcept { return comm_; }
  // This rank's parameters, to be loaded before the first forward().
  Model& model() noexcept { return model_; }

  // Empties the KV cache and makes room for `positions` positions (at most max_position_embeddings).
  void reset(uint64_t positions);
  // The KV cache's floats per position, summed over layers (known from the first reset()): a q/k/v
  // layer's keys and values for its kv heads, a latent-attention layer's kv latent and rotary key.
  uint64_t kv_cache_floats_per_position() const noexcept { return kv_width_; }
  // Feeds `token` at position `pos` (0, 1, 2, ... after reset) and returns the next-token logits,
  // the whole vocabulary's on every rank. Every rank calls it with the same arguments.
  const std::vector<float>& forward(int32_t token, uint64_t pos);
  // The length of the sequence the next forward()s belong to, as transformers counts it (the prompt's
  // while reading the prompt, then pos + 1): it chooses dynamic and longrope scaling's frequencies.
  // Returns true when they changed for positions already in the KV cache in a way transformers
  // recomputes (longrope switching to its long factors, as Phi-3's generation does): the caller must
  // feed the earlier positions again.
  bool set_sequence_length(uint64_t length);

 private:
  struct Mlp {
    const std::byte *gate_up = nullptr, *down = nullptr;
    const float *gate_up_bias = nullptr, *down_bias = nullptr;
    uint64_t units = 0;  // this rank's
  };
  // Latent attention's projections (DeepSeek; latent_attention.cpp). kv_a null: q/k/v attention.
  struct Latent {
    const std::byte *q_a = nullptr, *q_b = nullptr, *q = nullptr, *kv_a = nullptr, *kv_b = nullptr;
    const float *q_a_bias = nullptr, *q_a_norm = nullptr, *kv_a_bias = nullptr, *kv_a_norm = nullptr;
  };
  struct Layer {
    const float *attn_norm, *post_attn_norm = nullptr, *ffn_norm, *post_ffn_norm = nullptr;
    const float *qkv_bias = nullptr, *o_bias = nullptr;
    const float *q_norm = nullptr, *k_norm = nullptr;  // [head_dim] each (Qwen3); null: none
    const std::byte *qkv, *o;
    Latent latent;
    Mlp mlp;                               // a dense layer's
    const float* router = nullptr;         // [experts, hidden]: a sparse layer's
    const float* router_correction = nullptr;  // [experts]: DeepSeek-V3's e_score_correction_bias
    const float* router_bias = nullptr;        // [experts]: gpt-oss's
    std::vector<Mlp> experts;
    StackedExperts stacked;                // gpt-oss's and Llama 4's experts (stacked_experts.hpp), in place of `experts`
    const float* sinks = nullptr;          // [this rank's query heads]: gpt-oss's attention sinks
    Mlp shared;                            // the shared expert (units 0: none)
    const float* shared_gate = nullptr;    // [hidden]; null: the shared expert is not gated
    uint64_t window = 0;
    size_t rope = 0;  // which of ropes_ turns its queries and keys
    bool turns = true;  // false: this layer's queries and keys do not turn (SmolLM3, Llama 4)
    uint64_t chunk = 0;  // Llama 4's chunked attention: the chunk's length (0: none)
    // This rank's kv heads (0: the layer has no attention), the first one's index, the query heads
    // that share each, and where the layer's cache begins and how wide it is (in floats per position).
    uint64_t kv_heads = 0, kv_head0 = 0, kv_group = 0, kv_offset = 0, kv_width = 0;
    float scale = 1;  // what the scores are multiplied by
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
  uint64_t kv_width_ = 0;  // the cache's floats per position, summed over layers
  // Per-token activations and this rank's KV cache: [layer][position][the layer's kv_width], which is
  // the keys then the values of its kv heads, or latent attention's kv latent then rotary key.
  std::vector<float> x_, xb_, qkv_, att_, partial_, expert_out_, router_logits_, gate_up_, hidden_, kv_cache_;
  std::vector<float> weighted_in_;  // Llama 4: an expert's input times its weight
  // Latent attention's [q_lora_rank], [kv_lora_rank + rope] and, per head, its query in the cache's
  // terms [kv_lora_rank + rope] and the cached latents' weighted sum [kv_lora_rank].
  std::vector<float> q_latent_, kv_latent_, absorbed_;
  // Rotary frequencies (rope scaling applied) and this position's cos and sin: [0] every layer's,
  // [1] the sliding-window layers' own where the configuration gives them (sliding_rope_theta).
  struct RopeTable {
    std::vector<float> inv_freq, cos, sin;
    float attention_factor = 1;  // cos and sin scale by it (yarn, longrope)
    uint64_t length = 0;         // the sequence length inv_freq was computed for
  };
  std::vector<RopeTable> ropes_;
  std::vector<float> local_logits_, gathered_logits_, logits_;

  void bind();
  const RopeScaling& rope_scaling(size_t table) const { return table ? config_.sliding_rope_scaling : config_.rope_scaling; }
  Mlp bind_mlp(const std::string& at, uint64_t units) const;
  Latent bind_latent(const std::string& at) const;
  void attention_block(const Layer& L, uint64_t pos);
  // DeepSeek's: the latents computed whole and cached; each head attends to them through kv_b_proj.
  void latent_attention_block(const Layer& L, uint64_t pos);
  void latent_attention(const Layer& L, uint64_t pos);
  void attention(const Layer& L, uint64_t pos);
  // The first position `pos` attends to: a sliding window's or a chunk's (Llama 4) first, else 0.
  static uint64_t first_visible(const Layer& L, uint64_t pos);
  // scores[first..pos] (query head h's, scaled) become its attention weights, summing to 1.
  void attention_weights(const Layer& L, uint64_t h, float* scores, uint64_t first, uint64_t pos) const;
  void ffn_block(const Layer& L);
  void input_norm(const float* norm);  // xb_ = the sublayer's input: x_ normalised by `norm` (null: as it is)
  void whole_projection_norms(const Layer& L, float* q, float* k);
  // out = this rank's part of mlp(xb_) (its down_proj columns' partial sum); mlp_of: of x.
  void mlp(const Mlp& m, float* out);
  void mlp_of(const Mlp& m, const float* x, float* out);
  void expert_of(const Mlp& m, const float* x, float* out);
  // partial_ = this rank's part of the experts' weighted sum (and the gated shared expert's).
  void experts(const Layer& L);
  // x += the sum over ranks of partial_ (+ the row-parallel bias, which rank 0 alone holds),
  // normalised first by `post_norm` when the family has one there (Gemma 2).
  void add_all_reduced(const float* bias, const float* post_norm);
  void gather_logits();
};

}  // namespace wl
