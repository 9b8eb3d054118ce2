// DeepSeek's latent attention: the KV cache holds each position's kv latent and rotary key (not every
// head's keys and values), and attending through kv_b_proj absorbed gives the logits of the plain
// computation, which this test writes out itself: every position's keys and values expanded, then
// softmax attention, in double precision, on random weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/llama_engine.hpp"
#include "weightloader/communicator.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {
namespace {

using Vec = std::vector<double>;

// A two-layer DeepSeek of `heads` heads with the given latent shape; its MLPs are dense.
LlamaConfig deepseek(const std::string& type, uint64_t heads, uint64_t kv_lora, uint64_t nope, uint64_t rope, uint64_t v,
                     const std::string& q_lora) {
  const std::string json = fmt::format(
      R"({{"model_type": "{}", "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": {}, "num_attention_heads": {},
          "num_key_value_heads": {}, "vocab_size": 29, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
          "kv_lora_rank": {}, "q_lora_rank": {}, "qk_nope_head_dim": {}, "qk_rope_head_dim": {}, "v_head_dim": {},
          "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "first_k_dense_replace": 2, "n_group": 1, "topk_group": 1,
          "tie_word_embeddings": false}})",
      type, 2, heads, heads, kv_lora, q_lora, nope, rope, v);
  return llama_config_from_hf_json(json, "config.json");
}

TEST(LatentAttention, CacheHoldsTheLatentAndRotaryKeyPerLayer) {
  // DeepSeek-V3's attention shape (kv_lora_rank 512, rope 64, nope 128, v 128) with 4 heads of its 128.
  const LlamaConfig config = deepseek("deepseek_v3", 4, 512, 128, 64, 128, "24");
  ASSERT_TRUE(config.latent_attention());
  for (unsigned ranks : {1u, 2u}) {
    auto group = in_process_group(ranks);
    for (unsigned r = 0; r < ranks; ++r) {
      LlamaEngine engine(config, *group[r], DType::BF16, 1);
      engine.reset(10);
      // Every rank caches the whole latents: layers * (kv_lora_rank + qk_rope_head_dim) floats.
      EXPECT_EQ(engine.kv_cache_floats_per_position(), config.num_layers * (512 + 64)) << "rank " << r << " of " << ranks;
    }
  }
}

// The parameter `name` of `model`, widened to double.
Vec weights(const Model& model, const std::string& name) {
  const Parameter* p = model.find(name);
  EXPECT_NE(p, nullptr) << name;
  if (!p) return {};
  std::vector<float> f(p->data.numel());
  convert(p->dtype(), p->data.raw(), DType::F32, f.data(), f.size());
  return Vec(f.begin(), f.end());
}

// out[rows] = w[rows, cols] . x, the rows from `row0` on.
Vec times(const Vec& w, uint64_t row0, uint64_t rows, const Vec& x) {
  Vec out(rows, 0.0);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < x.size(); ++c) out[r] += w[(row0 + r) * x.size() + c] * x[c];
  return out;
}

Vec rmsnorm(const Vec& x, const Vec& weight) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double k = 1.0 / std::sqrt(ss / double(x.size()) + 1e-6);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * k * weight[i];
  return out;
}

// DeepSeek's rotary layout: adjacent pairs (2j, 2j + 1) turn by pos * theta^(-2j / dims).
void turn(double* v, uint64_t dims, uint64_t pos) {
  for (uint64_t j = 0; j < dims / 2; ++j) {
    const double angle = double(pos) * std::pow(10000.0, -2.0 * double(j) / double(dims));
    const double a = v[2 * j], b = v[2 * j + 1];
    v[2 * j] = a * std::cos(angle) - b * std::sin(angle);
    v[2 * j + 1] = b * std::cos(angle) + a * std::sin(angle);
  }
}

TEST(LatentAttention, AbsorbedAttentionMatchesExpandedKeysAndValues) {
  const uint64_t H = 3, kv_lora = 12, nope = 6, rope = 4, vd = 5, qk = nope + rope, n = 9;
  const LlamaConfig config = deepseek("deepseek_v2", H, kv_lora, nope, rope, vd, "null");
  const uint64_t D = config.hidden_size, V = config.vocab_size;
  for (DType dtype : {DType::F32, DType::BF16}) {
    auto group = in_process_group(1);
    LlamaEngine engine(config, *group[0], dtype, 2);
    // Random weights; the MLPs' zero (the layers' FFNs add nothing, so attention alone is compared).
    std::mt19937 rng(7);
    for (Parameter& p : engine.model().parameters()) {
      const uint64_t cols = p.shape().size() == 2 ? p.shape()[1] : 1;
      std::uniform_real_distribution<float> spread(-1.0f, 1.0f);
      std::vector<float> f(p.data.numel());
      for (float& v : f)
        v = p.name.find(".mlp.") != std::string::npos ? 0.0f
            : p.name.find("norm") != std::string::npos ? 1.0f + 0.25f * spread(rng)
                                                         : spread(rng) * std::sqrt(3.0f / float(cols));
      convert(DType::F32, f.data(), p.dtype(), p.data.raw(), f.size());
    }
    const Model& m = engine.model();
    const Vec embed = weights(m, "model.embed_tokens.weight"), head = weights(m, "lm_head.weight"), norm = weights(m, "model.norm.weight");
    std::vector<Vec> x(n);
    std::vector<int32_t> tokens(n);
    for (uint64_t p = 0; p < n; ++p) {
      tokens[p] = int32_t((7 * p + 3) % V);
      x[p] = Vec(embed.begin() + tokens[p] * D, embed.begin() + (tokens[p] + 1) * D);
    }
    for (uint64_t l = 0; l < config.num_layers; ++l) {
      const std::string at = fmt::format("model.layers.{}.", l);
      const Vec in_norm = weights(m, at + "input_layernorm.weight"), q_proj = weights(m, at + "self_attn.q_proj.weight");
      const Vec kv_a = weights(m, at + "self_attn.kv_a_proj_with_mqa.weight"), kv_norm = weights(m, at + "self_attn.kv_a_layernorm.weight");
      const Vec kv_b = weights(m, at + "self_attn.kv_b_proj.weight"), o_proj = weights(m, at + "self_attn.o_proj.weight");
      // Every position's queries, keys and values, expanded per head.
      std::vector<Vec> q(n), k(n), v(n);
      for (uint64_t p = 0; p < n; ++p) {
        const Vec h = rmsnorm(x[p], in_norm);
        q[p] = times(q_proj, 0, H * qk, h);
        const Vec latent = times(kv_a, 0, kv_lora + rope, h);
        const Vec c = rmsnorm(Vec(latent.begin(), latent.begin() + kv_lora), kv_norm);
        Vec k_rope(latent.begin() + kv_lora, latent.end());
        turn(k_rope.data(), rope, p);
        for (uint64_t i = 0; i < H; ++i) {
          turn(q[p].data() + i * qk + nope, rope, p);
          const Vec k_nope = times(kv_b, i * (nope + vd), nope, c), value = times(kv_b, i * (nope + vd) + nope, vd, c);
          k[p].insert(k[p].end(), k_nope.begin(), k_nope.end());
          k[p].insert(k[p].end(), k_rope.begin(), k_rope.end());
          v[p].insert(v[p].end(), value.begin(), value.end());
        }
      }
      for (uint64_t p = 0; p < n; ++p) {
        Vec out(H * vd, 0.0);
        for (uint64_t i = 0; i < H; ++i) {
          Vec scores(p + 1);
          double max = -INFINITY, sum = 0;
          for (uint64_t t = 0; t <= p; ++t) {
            for (uint64_t j = 0; j < qk; ++j) scores[t] += q[p][i * qk + j] * k[t][i * qk + j];
            scores[t] /= std::sqrt(double(qk));
            max = std::max(max, scores[t]);
          }
          for (double& s : scores) sum += s = std::exp(s - max);
          for (uint64_t t = 0; t <= p; ++t)
            for (uint64_t j = 0; j < vd; ++j) out[i * vd + j] += scores[t] / sum * v[t][i * vd + j];
        }
        const Vec added = times(o_proj, 0, D, out);
        for (uint64_t j = 0; j < D; ++j) x[p][j] += added[j];
      }
    }
    engine.reset(n);
    for (uint64_t p = 0; p < n; ++p) {
      const std::vector<float>& got = engine.forward(tokens[p], p);
      const Vec want = times(head, 0, V, rmsnorm(x[p], norm));
      double scale = 0;
      for (double w : want) scale = std::max(scale, std::abs(w));
      for (uint64_t i = 0; i < V; ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * scale) << dtype_name(dtype) << " position " << p << " logit " << i;
    }
  }
}

}  // namespace
}  // namespace wl
