// DeepSeek's multi-head latent attention, one rank's heads. The latents (q_a_proj's and
// kv_a_proj_with_mqa's, each normalised) are computed whole on every rank, and the cache holds each
// position's kv latent and turned rotary key: kv_lora_rank + qk_rope_head_dim floats, where the keys
// and values kv_b_proj expands them into would be heads * (qk_head_dim + v_head_dim).
// kv_b_proj is absorbed instead of applied to every cached position: head h's rows are
// [W_UK (qk_nope_head_dim rows) | W_UV (v_head_dim rows)], each of kv_lora_rank columns, so
//   q_nope . (W_UK c) = (W_UK^T q_nope) . c   and   sum_t p_t W_UV c_t = W_UV (sum_t p_t c_t).
#include <cblas.h>

#include <algorithm>

#include "engine/engine_math.hpp"
#include "engine/llama_engine.hpp"
#include "engine/matvec.hpp"
#include "engine/rotary.hpp"

namespace wl {

namespace {

// transformers' DeepseekV2/V3RMSNorm of q_a_layernorm and kv_a_layernorm keeps its default epsilon.
constexpr float kLatentNormEps = 1e-6f;

}  // namespace

LlamaEngine::Latent LlamaEngine::bind_latent(const std::string& at) const {
  auto raw = [&](const std::string& name) -> const std::byte* {
    const Parameter* p = model_.find(at + name);
    return p ? p->data.raw() : nullptr;
  };
  auto f32 = [&](const std::string& name) { return reinterpret_cast<const float*>(raw(name)); };
  return Latent{raw("q_a_proj.weight"), raw("q_b_proj.weight"), raw("q_proj.weight"), raw("kv_a_proj_with_mqa.weight"), raw("kv_b_proj.weight"),
                f32("q_a_proj.bias"), f32("q_a_layernorm.weight"), f32("kv_a_proj_with_mqa.bias"), f32("kv_a_layernorm.weight")};
}

void LlamaEngine::latent_attention_block(const Layer& L, uint64_t pos) {
  const LatentAttention& a = config_.mla;
  const Latent& M = L.latent;
  const uint64_t D = config_.hidden_size, H = part_.q_heads, qk = a.qk_head_dim(), nope = a.qk_nope_head_dim, vd = a.v_head_dim;
  const uint64_t kv_lora = a.kv_lora_rank, kv_a_rows = kv_lora + a.qk_rope_head_dim;
  input_norm(L.attn_norm);
  float* q = qkv_.data();
  // The latents first (and the queries straight from the hidden state, without q_lora_rank).
  std::vector<MatVec> first{{M.kv_a, dtype_, kv_a_rows, D, xb_.data(), kv_latent_.data()}};
  if (M.q_a)
    first.push_back({M.q_a, dtype_, a.q_lora_rank, D, xb_.data(), q_latent_.data()});
  else
    first.push_back({M.q, dtype_, H * qk, D, xb_.data(), q});
  run_matvecs(pool_, first);
  if (M.kv_a_bias)
    for (uint64_t i = 0; i < kv_a_rows; ++i) kv_latent_[i] += M.kv_a_bias[i];
  rmsnorm(kv_latent_.data(), kv_latent_.data(), M.kv_a_norm, kv_lora, kLatentNormEps, 0.0f);
  if (M.q_a) {
    if (M.q_a_bias)
      for (uint64_t i = 0; i < a.q_lora_rank; ++i) q_latent_[i] += M.q_a_bias[i];
    rmsnorm(q_latent_.data(), q_latent_.data(), M.q_a_norm, a.q_lora_rank, kLatentNormEps, 0.0f);
    const MatVec q_b{M.q_b, dtype_, H * qk, a.q_lora_rank, q_latent_.data(), q};
    run_matvecs(pool_, {&q_b, 1});
  }
  // The rotary parts: each head's query's last qk_rope_head_dim, and the one key they share.
  const RopeTable& turn = ropes_[L.rope];
  float* k_rope = kv_latent_.data() + kv_lora;
  if (a.interleaved_rope) {
    rope_adjacent_pairs(q + nope, H, qk, turn.cos, turn.sin);
    rope_adjacent_pairs(k_rope, 1, 0, turn.cos, turn.sin);
  } else {
    rope(q + nope, H, qk, turn.cos, turn.sin);
    rope(k_rope, 1, a.qk_rope_head_dim, turn.cos, turn.sin);
  }
  std::copy(kv_latent_.begin(), kv_latent_.end(), kv_cache_.begin() + L.kv_offset * positions_ + pos * L.kv_width);
  latent_attention(L, pos);
  const MatVec o{L.o, dtype_, D, H * vd, att_.data(), partial_.data()};
  run_matvecs(pool_, {&o, 1});
  add_all_reduced(L.o_bias, nullptr);
}

// att_ = each head's output over the cached latents. A head's query in the cache's terms is
// [W_UK^T q_nope | q_rope], so its scores are one product with the cached rows and the latents'
// weighted sum another. One task per group of heads (as many groups as threads): both products are
// matrix products over the group's queries, which read the cached rows once per group, not once per
// head (the cache is what a long context makes large).
void LlamaEngine::latent_attention(const Layer& L, uint64_t pos) {
  const LatentAttention& a = config_.mla;
  const uint64_t H = part_.q_heads, qk = a.qk_head_dim(), nope = a.qk_nope_head_dim, vd = a.v_head_dim, kv_lora = a.kv_lora_rank;
  const uint64_t width = L.kv_width, head_bytes = (nope + vd) * kv_lora * dtype_size(dtype_);
  const uint64_t first = first_visible(L, pos), seen = pos + 1 - first, stride = pos + 1;
  const float* seen_rows = kv_cache_.data() + L.kv_offset * positions_ + first * width;  // the layer's visible cached rows
  float* queries = absorbed_.data();       // H rows of width
  float* mixed = queries + H * width;      // H rows of kv_lora
  const size_t groups = std::min<size_t>(H, pool_.size());
  pool_.run(groups, [&](size_t g) {
    const uint64_t h0 = H * g / groups, n = H * (g + 1) / groups - h0;
    for (uint64_t h = h0; h < h0 + n; ++h) {
      const float* q = qkv_.data() + h * qk;
      transposed_matvec(L.latent.kv_b + h * head_bytes, dtype_, nope, kv_lora, q, queries + h * width);
      std::copy(q + nope, q + qk, queries + h * width + kv_lora);
    }
    thread_local std::vector<float> scores;  // a row of pos + 1 per head of the group
    scores.resize(n * stride);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(seen), int(width), L.scale, queries + h0 * width, int(width),
                seen_rows, int(width), 0.0f, scores.data() + first, int(stride));
    for (uint64_t i = 0; i < n; ++i) attention_weights(L, h0 + i, scores.data() + i * stride, first, pos);
    // The weighted sums over the rows' latents (their first kv_lora floats).
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(kv_lora), int(seen), 1.0f, scores.data() + first, int(stride),
                seen_rows, int(width), 0.0f, mixed + h0 * kv_lora, int(kv_lora));
    for (uint64_t h = h0; h < h0 + n; ++h) {
      const std::byte* w_uv = L.latent.kv_b + h * head_bytes + nope * kv_lora * dtype_size(dtype_);
      matvec({w_uv, dtype_, vd, kv_lora, mixed + h * kv_lora, att_.data() + h * vd});
    }
  });
}

}  // namespace wl
