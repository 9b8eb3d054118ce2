#include "engine/llama_engine.hpp"

#include <cmath>
#include <span>

#include <fmt/format.h>

#include "engine/matvec.hpp"
#include "weightloader/convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

void rmsnorm(float* out, const float* x, const float* w, uint64_t n, float eps) {
  float ss = 0;
  for (uint64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
  for (uint64_t i = 0; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

// Hugging Face's rotary layout: element j of a head turns with element j + head_dim / 2.
void rope(float* v, uint64_t heads, uint64_t hd, const std::vector<float>& cos, const std::vector<float>& sin) {
  const uint64_t half = hd / 2;
  for (uint64_t h = 0; h < heads; ++h, v += hd)
    for (uint64_t j = 0; j < half; ++j) {
      const float a = v[j], b = v[j + half];
      v[j] = a * cos[j] - b * sin[j];
      v[j + half] = a * sin[j] + b * cos[j];
    }
}

}  // namespace

struct LlamaEngine::Rank {
  RankPartition part;
  Model model;
  struct Layer {
    const float *attn_norm, *ffn_norm, *qkv_bias = nullptr, *o_bias = nullptr, *gate_up_bias = nullptr, *down_bias = nullptr;
    const std::byte *qkv, *o, *gate_up, *down;
  };
  std::vector<Layer> layers;
  const std::byte* embed = nullptr;
  const std::byte* lm_head = nullptr;  // the embedding when tied
  const float* norm = nullptr;
  DType dtype = DType::F32;
  // Per-token activations and this rank's KV cache: [layer][position][kv_heads * head_dim].
  std::vector<float> qkv, att, partial, gate_up, hidden;
  std::vector<float> k_cache, v_cache;
};

LlamaEngine::LlamaEngine(const LlamaConfig& config, unsigned tp, DType dtype, unsigned threads)
    : config_(config), pool_(threads) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the engine stores weights in F32, BF16 or F16, not {}", dtype_name(dtype)));
  init_blas_threads();
  for (unsigned r = 0; r < tp; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->part = partition_rank(config_, r, tp);
    rank->model = declare_rank_parameters(config_, rank->part, dtype);
    rank->dtype = dtype;
    ranks_.push_back(std::move(rank));
  }
  x_.resize(config_.hidden_size);
  xb_.resize(config_.hidden_size);
  logits_.resize(config_.vocab_size);
}

LlamaEngine::~LlamaEngine() = default;

Model& LlamaEngine::rank_model(unsigned r) { return ranks_.at(r)->model; }

uint64_t LlamaEngine::parameter_bytes() const {
  uint64_t sum = 0;
  for (const auto& r : ranks_) sum += r->model.total_bytes();
  return sum;
}

void LlamaEngine::bind() {
  const LlamaConfig& c = config_;
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    auto raw = [&](const std::string& name) -> const std::byte* {
      const Parameter* p = r.model.find(name);
      return p ? p->data.raw() : nullptr;
    };
    auto f32 = [&](const std::string& name) { return reinterpret_cast<const float*>(raw(name)); };
    r.embed = raw("model.embed_tokens.weight");
    r.lm_head = c.tie_word_embeddings ? r.embed : raw("lm_head.weight");
    r.norm = f32("model.norm.weight");
    r.layers.clear();
    for (uint64_t l = 0; l < c.num_layers; ++l) {
      const std::string at = fmt::format("model.layers.{}.", l);
      Rank::Layer L{};
      L.attn_norm = f32(at + "input_layernorm.weight");
      L.ffn_norm = f32(at + "post_attention_layernorm.weight");
      L.qkv = raw(at + "self_attn.qkv_proj.weight");
      L.qkv_bias = f32(at + "self_attn.qkv_proj.bias");
      L.o = raw(at + "self_attn.o_proj.weight");
      L.o_bias = f32(at + "self_attn.o_proj.bias");
      L.gate_up = raw(at + "mlp.gate_up_proj.weight");
      L.gate_up_bias = f32(at + "mlp.gate_up_proj.bias");
      L.down = raw(at + "mlp.down_proj.weight");
      L.down_bias = f32(at + "mlp.down_proj.bias");
      r.layers.push_back(L);
    }
    const uint64_t hd = c.head_dim;
    r.qkv.resize((r.part.q_heads + 2 * r.part.kv_heads) * hd);
    r.att.resize(r.part.q_heads * hd);
    r.partial.resize(c.hidden_size);
    r.gate_up.resize(2 * r.part.ff);
    r.hidden.resize(r.part.ff);
  }
  bound_ = true;
}

void LlamaEngine::reset(uint64_t positions) {
  if (positions > config_.max_position_embeddings)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} positions exceed the model's max_position_embeddings {}", positions, config_.max_position_embeddings));
  if (!bound_) bind();
  positions_ = positions;
  for (auto& r : ranks_) {
    const uint64_t n = config_.num_layers * positions * r->part.kv_heads * config_.head_dim;
    r->k_cache.assign(n, 0.0f);
    r->v_cache.assign(n, 0.0f);
  }
}

const std::vector<float>& LlamaEngine::forward(int32_t token, uint64_t pos) {
  const LlamaConfig& c = config_;
  if (token < 0 || uint64_t(token) >= c.vocab_size)
    throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", token, c.vocab_size));
  if (pos >= positions_) throw Error(ErrorCode::InvalidArgument, fmt::format("position {} is beyond the {} reserved", pos, positions_));
  const uint64_t D = c.hidden_size, hd = c.head_dim;
  const float eps = float(c.rms_norm_eps);
  const unsigned n = ranks();

  // Vocabulary-parallel embedding: the rank that owns the row provides it.
  for (auto& r : ranks_)
    if (uint64_t(token) >= r->part.vocab0 && uint64_t(token) < r->part.vocab0 + r->part.vocab)
      convert(r->dtype, r->embed + (token - r->part.vocab0) * D * dtype_size(r->dtype), DType::F32, x_.data(), D);

  std::vector<float> cos(hd / 2), sin(hd / 2);
  for (uint64_t j = 0; j < hd / 2; ++j) {
    const float freq = 1.0f / std::pow(float(c.rope_theta), float(2 * j) / float(hd));
    const float angle = float(pos) * freq;
    cos[j] = std::cos(angle);
    sin[j] = std::sin(angle);
  }
  const float inv_sqrt_hd = 1.0f / std::sqrt(float(hd));
  // One product per rank, all run in one parallel step.
  std::vector<MatVec> jobs(n);
  auto rank_products = [&](auto&& product_of) {
    for (unsigned i = 0; i < n; ++i) jobs[i] = product_of(*ranks_[i]);
    run_matvecs(pool_, jobs);
  };
  // Adds every rank's partial sum to x in rank order, then the row-parallel bias (rank 0's).
  auto all_reduce = [&](const float* const Rank::Layer::*bias, uint64_t l) {
    for (auto& r : ranks_)
      for (uint64_t i = 0; i < D; ++i) x_[i] += r->partial[i];
    if (const float* b = ranks_[0]->layers[l].*bias)
      for (uint64_t i = 0; i < D; ++i) x_[i] += b[i];
  };

  for (uint64_t l = 0; l < c.num_layers; ++l) {
    rmsnorm(xb_.data(), x_.data(), ranks_[0]->layers[l].attn_norm, D, eps);
    rank_products([&](Rank& r) { return MatVec{r.layers[l].qkv, r.dtype, r.qkv.size(), D, xb_.data(), r.qkv.data()}; });
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (const float* b = r.layers[l].qkv_bias)
        for (uint64_t i = 0; i < r.qkv.size(); ++i) r.qkv[i] += b[i];
      const uint64_t kvw = r.part.kv_heads * hd;
      float* q = r.qkv.data();
      float* k = q + r.part.q_heads * hd;
      const float* v = k + kvw;
      rope(q, r.part.q_heads, hd, cos, sin);
      rope(k, r.part.kv_heads, hd, cos, sin);
      const uint64_t at = (l * positions_ + pos) * kvw;
      std::copy(k, k + kvw, r.k_cache.begin() + at);
      std::copy(v, v + kvw, r.v_cache.begin() + at);
    }
    // Attention, one task per (rank, query head).
    const uint64_t heads_per_rank = ranks_[0]->part.q_heads;
    pool_.run(n * heads_per_rank, [&](size_t task) {
      Rank& r = *ranks_[task / heads_per_rank];
      const uint64_t h = task % heads_per_rank;
      const uint64_t kv_local = (r.part.q_head0 + h) / (c.num_heads / c.num_kv_heads) - r.part.kv_head0;
      const uint64_t kvw = r.part.kv_heads * hd;
      const float* q = r.qkv.data() + h * hd;
      thread_local std::vector<float> scores;
      scores.resize(pos + 1);
      float max = -INFINITY;
      for (uint64_t t = 0; t <= pos; ++t) {
        const float* k = r.k_cache.data() + (l * positions_ + t) * kvw + kv_local * hd;
        float s = 0;
        for (uint64_t j = 0; j < hd; ++j) s += q[j] * k[j];
        scores[t] = s * inv_sqrt_hd;
        max = std::max(max, scores[t]);
      }
      float sum = 0;
      for (uint64_t t = 0; t <= pos; ++t) sum += scores[t] = std::exp(scores[t] - max);
      float* out = r.att.data() + h * hd;
      std::fill(out, out + hd, 0.0f);
      for (uint64_t t = 0; t <= pos; ++t) {
        const float* v = r.v_cache.data() + (l * positions_ + t) * kvw + kv_local * hd;
        const float a = scores[t] / sum;
        for (uint64_t j = 0; j < hd; ++j) out[j] += a * v[j];
      }
    });
    rank_products([&](Rank& r) { return MatVec{r.layers[l].o, r.dtype, D, r.att.size(), r.att.data(), r.partial.data()}; });
    all_reduce(&Rank::Layer::o_bias, l);

    rmsnorm(xb_.data(), x_.data(), ranks_[0]->layers[l].ffn_norm, D, eps);
    rank_products([&](Rank& r) { return MatVec{r.layers[l].gate_up, r.dtype, r.gate_up.size(), D, xb_.data(), r.gate_up.data()}; });
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (const float* b = r.layers[l].gate_up_bias)
        for (uint64_t i = 0; i < r.gate_up.size(); ++i) r.gate_up[i] += b[i];
      for (uint64_t i = 0; i < r.part.ff; ++i) {
        const float g = r.gate_up[i];
        r.hidden[i] = g / (1.0f + std::exp(-g)) * r.gate_up[r.part.ff + i];
      }
    }
    rank_products([&](Rank& r) { return MatVec{r.layers[l].down, r.dtype, D, r.part.ff, r.hidden.data(), r.partial.data()}; });
    all_reduce(&Rank::Layer::down_bias, l);
  }

  rmsnorm(xb_.data(), x_.data(), ranks_[0]->norm, D, eps);
  rank_products([&](Rank& r) { return MatVec{r.lm_head, r.dtype, r.part.vocab, D, xb_.data(), logits_.data() + r.part.vocab0}; });
  return logits_;
}

}  // namespace wl
