// DeepSeek's multi-head latent attention, one rank's heads. The latents (q_a_proj's and
// kv_a_proj_with_mqa's, each normalised) are computed whole on every rank; kv_b_proj expands this
// position's into its heads' keys [nope | shared rope key] and values, which are cached as any
// layer's are, and the attention over them is the engine's own (attention()).
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
  std::vector<MatVec> second{{M.kv_b, dtype_, H * (nope + vd), kv_lora, kv_latent_.data(), kv_expanded_.data()}};
  if (M.q_a) {
    if (M.q_a_bias)
      for (uint64_t i = 0; i < a.q_lora_rank; ++i) q_latent_[i] += M.q_a_bias[i];
    rmsnorm(q_latent_.data(), q_latent_.data(), M.q_a_norm, a.q_lora_rank, kLatentNormEps, 0.0f);
    second.push_back({M.q_b, dtype_, H * qk, a.q_lora_rank, q_latent_.data(), q});
  }
  run_matvecs(pool_, second);
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
  float* k_cache = k_cache_.data() + L.kv_offset * positions_ + pos * H * qk;
  float* v_cache = v_cache_.data() + L.kv_offset * positions_ + pos * H * vd;
  for (uint64_t h = 0; h < H; ++h) {
    const float* expanded = kv_expanded_.data() + h * (nope + vd);
    std::copy_n(expanded, nope, k_cache + h * qk);
    std::copy_n(k_rope, a.qk_rope_head_dim, k_cache + h * qk + nope);
    std::copy_n(expanded + nope, vd, v_cache + h * vd);
  }
  attention(L, pos);
  const MatVec o{L.o, dtype_, D, H * vd, att_.data(), partial_.data()};
  run_matvecs(pool_, {&o, 1});
  add_all_reduced(L.o_bias, nullptr);
}

}  // namespace wl
