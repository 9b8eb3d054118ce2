#include "engine/llama_engine.hpp"

#include <algorithm>
#include <cmath>

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

LlamaEngine::LlamaEngine(const LlamaConfig& config, Communicator& comm, DType dtype, unsigned threads)
    : config_(config), comm_(comm), part_(partition_rank(config, comm.rank(), comm.size())), dtype_(dtype), pool_(threads) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the engine stores weights in F32, BF16 or F16, not {}", dtype_name(dtype)));
  init_blas_threads();
  model_ = declare_rank_parameters(config_, part_, dtype);
  for (unsigned r = 0; r < comm.size(); ++r) vocab_starts_.push_back(partition_rank(config_, r, comm.size()).vocab0);
  vocab_starts_.push_back(config_.vocab_size);
  x_.resize(config_.hidden_size);
  xb_.resize(config_.hidden_size);
  logits_.resize(config_.vocab_size);
}

void LlamaEngine::bind() {
  const LlamaConfig& c = config_;
  auto raw = [&](const std::string& name) -> const std::byte* {
    const Parameter* p = model_.find(name);
    return p ? p->data.raw() : nullptr;
  };
  auto f32 = [&](const std::string& name) { return reinterpret_cast<const float*>(raw(name)); };
  embed_ = raw("model.embed_tokens.weight");
  lm_head_ = c.tie_word_embeddings ? embed_ : raw("lm_head.weight");
  norm_ = f32("model.norm.weight");
  layers_.clear();
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    Layer L{};
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
    layers_.push_back(L);
  }
  const uint64_t hd = c.head_dim;
  qkv_.resize((part_.q_heads + 2 * part_.kv_heads) * hd);
  att_.resize(part_.q_heads * hd);
  partial_.resize(c.hidden_size);
  gate_up_.resize(2 * part_.ff);
  hidden_.resize(part_.ff);
  uint64_t widest = 0;
  for (size_t r = 0; r + 1 < vocab_starts_.size(); ++r) widest = std::max(widest, vocab_starts_[r + 1] - vocab_starts_[r]);
  local_logits_.assign(widest, 0.0f);
  gathered_logits_.resize(widest * comm_.size());
  bound_ = true;
}

void LlamaEngine::reset(uint64_t positions) {
  if (positions > config_.max_position_embeddings)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} positions exceed the model's max_position_embeddings {}", positions, config_.max_position_embeddings));
  if (!bound_) bind();
  positions_ = positions;
  const uint64_t n = config_.num_layers * positions * part_.kv_heads * config_.head_dim;
  k_cache_.assign(n, 0.0f);
  v_cache_.assign(n, 0.0f);
}

void LlamaEngine::add_all_reduced(const float* bias) {
  const uint64_t D = config_.hidden_size;
  if (bias)
    for (uint64_t i = 0; i < D; ++i) partial_[i] += bias[i];
  comm_.all_reduce_sum(partial_.data(), D);
  for (uint64_t i = 0; i < D; ++i) x_[i] += partial_[i];
}

void LlamaEngine::attention(uint64_t l, uint64_t pos) {
  const LlamaConfig& c = config_;
  const uint64_t hd = c.head_dim, kvw = part_.kv_heads * hd;
  const float inv_sqrt_hd = 1.0f / std::sqrt(float(hd));
  // One task per query head.
  pool_.run(part_.q_heads, [&](size_t h) {
    const uint64_t kv_local = (part_.q_head0 + h) / (c.num_heads / c.num_kv_heads) - part_.kv_head0;
    const float* q = qkv_.data() + h * hd;
    thread_local std::vector<float> scores;
    scores.resize(pos + 1);
    float max = -INFINITY;
    for (uint64_t t = 0; t <= pos; ++t) {
      const float* k = k_cache_.data() + (l * positions_ + t) * kvw + kv_local * hd;
      float s = 0;
      for (uint64_t j = 0; j < hd; ++j) s += q[j] * k[j];
      scores[t] = s * inv_sqrt_hd;
      max = std::max(max, scores[t]);
    }
    float sum = 0;
    for (uint64_t t = 0; t <= pos; ++t) sum += scores[t] = std::exp(scores[t] - max);
    float* out = att_.data() + h * hd;
    std::fill(out, out + hd, 0.0f);
    for (uint64_t t = 0; t <= pos; ++t) {
      const float* v = v_cache_.data() + (l * positions_ + t) * kvw + kv_local * hd;
      const float a = scores[t] / sum;
      for (uint64_t j = 0; j < hd; ++j) out[j] += a * v[j];
    }
  });
}

// Each rank computed its vocabulary rows; every rank receives all of them (padded to the widest slice).
void LlamaEngine::gather_logits() {
  const uint64_t widest = local_logits_.size();
  comm_.all_gather(local_logits_.data(), widest * sizeof(float), gathered_logits_.data());
  for (size_t r = 0; r + 1 < vocab_starts_.size(); ++r)
    std::copy_n(gathered_logits_.begin() + r * widest, vocab_starts_[r + 1] - vocab_starts_[r], logits_.begin() + vocab_starts_[r]);
}

const std::vector<float>& LlamaEngine::forward(int32_t token, uint64_t pos) {
  const LlamaConfig& c = config_;
  if (token < 0 || uint64_t(token) >= c.vocab_size)
    throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", token, c.vocab_size));
  if (pos >= positions_) throw Error(ErrorCode::InvalidArgument, fmt::format("position {} is beyond the {} reserved", pos, positions_));
  const uint64_t D = c.hidden_size, hd = c.head_dim;
  const float eps = float(c.rms_norm_eps);

  // Vocabulary-parallel embedding: the rank that owns the row provides it.
  const unsigned owner = unsigned(std::upper_bound(vocab_starts_.begin(), vocab_starts_.end() - 1, uint64_t(token)) - vocab_starts_.begin() - 1);
  if (owner == part_.rank) convert(dtype_, embed_ + (token - part_.vocab0) * D * dtype_size(dtype_), DType::F32, x_.data(), D);
  comm_.broadcast(x_.data(), D * sizeof(float), owner);

  std::vector<float> cos(hd / 2), sin(hd / 2);
  for (uint64_t j = 0; j < hd / 2; ++j) {
    const float freq = 1.0f / std::pow(float(c.rope_theta), float(2 * j) / float(hd));
    const float angle = float(pos) * freq;
    cos[j] = std::cos(angle);
    sin[j] = std::sin(angle);
  }
  auto product = [&](const std::byte* w, uint64_t rows, uint64_t cols, const float* in, float* out) {
    const MatVec job{w, dtype_, rows, cols, in, out};
    run_matvecs(pool_, {&job, 1});
  };

  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const Layer& L = layers_[l];
    rmsnorm(xb_.data(), x_.data(), L.attn_norm, D, eps);
    product(L.qkv, qkv_.size(), D, xb_.data(), qkv_.data());
    if (L.qkv_bias)
      for (uint64_t i = 0; i < qkv_.size(); ++i) qkv_[i] += L.qkv_bias[i];
    const uint64_t kvw = part_.kv_heads * hd;
    float* q = qkv_.data();
    float* k = q + part_.q_heads * hd;
    const float* v = k + kvw;
    rope(q, part_.q_heads, hd, cos, sin);
    rope(k, part_.kv_heads, hd, cos, sin);
    const uint64_t at = (l * positions_ + pos) * kvw;
    std::copy(k, k + kvw, k_cache_.begin() + at);
    std::copy(v, v + kvw, v_cache_.begin() + at);
    attention(l, pos);
    product(L.o, D, att_.size(), att_.data(), partial_.data());
    add_all_reduced(L.o_bias);

    rmsnorm(xb_.data(), x_.data(), L.ffn_norm, D, eps);
    product(L.gate_up, gate_up_.size(), D, xb_.data(), gate_up_.data());
    if (L.gate_up_bias)
      for (uint64_t i = 0; i < gate_up_.size(); ++i) gate_up_[i] += L.gate_up_bias[i];
    for (uint64_t i = 0; i < part_.ff; ++i) {
      const float g = gate_up_[i];
      hidden_[i] = g / (1.0f + std::exp(-g)) * gate_up_[part_.ff + i];
    }
    product(L.down, D, part_.ff, hidden_.data(), partial_.data());
    add_all_reduced(L.down_bias);
  }

  rmsnorm(xb_.data(), x_.data(), norm_, D, eps);
  product(lm_head_, part_.vocab, D, xb_.data(), local_logits_.data());
  gather_logits();
  return logits_;
}

}  // namespace wl
