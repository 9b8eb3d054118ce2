#include "engine/llama_engine.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "engine/engine_math.hpp"
#include "engine/expert_routing.hpp"
#include "engine/rotary.hpp"
#include "engine/matvec.hpp"
#include "families/family.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

LlamaEngine::LlamaEngine(const LlamaConfig& config, Communicator& comm, DType dtype, unsigned threads, bool expert_parallel)
    : config_(config), comm_(comm), part_(partition_rank(config, comm.rank(), comm.size(), expert_parallel)), dtype_(dtype),
      pool_(threads) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the engine stores weights in F32, BF16 or F16, not {}", dtype_name(dtype)));
  init_blas_threads();
  model_ = declare_rank_parameters(config_, part_, dtype);
  for (unsigned r = 0; r < comm.size(); ++r) vocab_starts_.push_back(partition_rank(config_, r, comm.size()).vocab0);
  vocab_starts_.push_back(config_.vocab_size);
  x_.resize(config_.hidden_size);
  xb_.resize(config_.hidden_size);
  logits_.resize(config_.vocab_size);
  for (const bool sliding : {false, true}) {
    if (sliding && !config_.sliding_rope_theta) break;
    RopeTable& t = ropes_.emplace_back();
    t.inv_freq = rotary_frequencies(config_, 0, sliding);
    t.attention_factor = rotary_attention_factor(config_, sliding);
    t.cos.resize(t.inv_freq.size());
    t.sin.resize(t.inv_freq.size());
  }
}

LlamaEngine::Mlp LlamaEngine::bind_mlp(const std::string& at, uint64_t units) const {
  auto raw = [&](const std::string& name) -> const std::byte* {
    const Parameter* p = model_.find(name);
    return p ? p->data.raw() : nullptr;
  };
  return Mlp{raw(at + "gate_up_proj.weight"), raw(at + "down_proj.weight"),
             reinterpret_cast<const float*>(raw(at + "gate_up_proj.bias")), reinterpret_cast<const float*>(raw(at + "down_proj.bias")),
             units};
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
  uint64_t widest_ff = 0, widest_kv = 0;
  kv_width_ = 0;
  const float scale = c.attention_multiplier > 0 ? float(c.attention_multiplier)  // Granite
                                                 : 1.0f / std::sqrt(float(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : double(c.head_dim)));
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    const LayerPartition& lp = part_.layers[l];
    Layer L{};
    L.kv_heads = lp.kv_heads, L.kv_head0 = lp.kv_head0, L.kv_offset = kv_width_;
    L.kv_group = lp.kv_heads ? c.num_heads / c.layer_kv_heads(l) : 0;
    L.scale = scale;
    L.kv_width = lp.kv_heads * 2 * c.head_dim;
    if (c.latent_attention() && lp.kv_heads) {
      L.latent = bind_latent(at + "self_attn.");
      L.scale = float(c.mla.softmax_scale);
      L.kv_width = c.mla.kv_lora_rank + c.mla.qk_rope_head_dim;  // every head's keys and values come from it
    }
    kv_width_ += L.kv_width;
    widest_kv = std::max(widest_kv, lp.kv_heads);
    // Gemma 2 and GLM-4 normalise each sublayer's output too; OLMo 2 the outputs only.
    const LayerNorms norms = layer_norms(c);
    auto norm = [&](const char* name) { return name ? f32(at + name + ".weight") : nullptr; };
    L.attn_norm = norm(norms.attn_in), L.post_attn_norm = norm(norms.attn_out);
    L.ffn_norm = norm(norms.ffn_in), L.post_ffn_norm = norm(norms.ffn_out);
    L.qkv = raw(at + "self_attn.qkv_proj.weight");
    L.qkv_bias = f32(at + "self_attn.qkv_proj.bias");
    L.q_norm = f32(at + "self_attn.q_norm.weight");
    L.k_norm = f32(at + "self_attn.k_norm.weight");
    L.o = raw(at + "self_attn.o_proj.weight");
    L.o_bias = f32(at + "self_attn.o_proj.bias");
    L.sinks = f32(at + "self_attn.sinks");
    L.window = c.window_layer(l);
    L.rope = c.sliding_rope_layer(l) ? 1 : 0;
    L.turns = c.rope_layer(l);
    L.chunk = c.chunk_layer(l);
    if (c.moe_layer(l)) {
      const std::string moe = moe_prefix(c, l);
      const std::string router = router_prefix(c, l);
      L.router = f32(router + "weight");
      L.router_bias = f32(router + "bias");
      L.router_correction = f32(moe + "gate.e_score_correction_bias");
      if (c.moe.stacks == MoeConfig::Stacks::Interleaved) {
        L.stacked = {raw(moe + "experts.gate_up_proj"), raw(moe + "experts.down_proj"), f32(moe + "experts.gate_up_proj_bias"),
                     f32(moe + "experts.down_proj_bias"), part_.expert_ff};
      } else if (c.moe.stacks == MoeConfig::Stacks::Halves) {
        L.stacked.down = raw(moe + "experts.down_proj"), L.stacked.units = part_.expert_ff;
        if (const std::byte* whole = raw(moe + "experts.gate_up_proj")) {  // expert parallel: whole slots, gate then up
          const uint64_t U = c.moe.expert_intermediate_size;
          L.stacked.gate = whole, L.stacked.up = whole + U * dtype_size(dtype_), L.stacked.columns = 2 * U;
        } else {
          L.stacked.gate = raw(moe + "experts.gate_proj"), L.stacked.up = raw(moe + "experts.up_proj"), L.stacked.columns = part_.expert_ff;
        }
      } else {
        for (uint64_t e = part_.expert0; e < part_.expert0 + part_.experts; ++e)
          L.experts.push_back(bind_mlp(fmt::format("{}experts.{}.", moe, e), part_.expert_ff));
      }
      if (c.moe.shared_expert_intermediate_size) {
        L.shared = bind_mlp(shared_expert_prefix(c, l), part_.shared_ff);
        L.shared_gate = c.moe.shared_expert_gated ? f32(moe + std::string(mlp_names(c.architecture).shared_gate) + ".weight") : nullptr;
      }
      widest_ff = std::max({widest_ff, part_.expert_ff, part_.shared_ff});
    } else if (lp.ff) {
      L.mlp = bind_mlp(mlp_prefix(c, l), lp.ff);
      widest_ff = std::max(widest_ff, lp.ff);
    }
    layers_.push_back(std::move(L));
  }
  const uint64_t hd = c.head_dim;
  qkv_.resize((part_.q_heads + 2 * widest_kv) * hd);
  att_.resize(part_.q_heads * hd);
  if (c.latent_attention()) {
    const LatentAttention& a = c.mla;
    qkv_.resize(std::max(qkv_.size(), part_.q_heads * a.qk_head_dim()));
    att_.resize(part_.q_heads * std::max(hd, a.v_head_dim));
    q_latent_.resize(a.q_lora_rank);
    kv_latent_.resize(a.kv_lora_rank + a.qk_rope_head_dim);
    absorbed_.resize(part_.q_heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim));
  }
  partial_.resize(c.hidden_size);
  expert_out_.resize(c.hidden_size);
  weighted_in_.resize(c.hidden_size);
  router_logits_.resize(c.moe.num_experts);
  gate_up_.resize(2 * widest_ff);
  hidden_.resize(widest_ff);
  uint64_t widest = 0;
  for (size_t r = 0; r + 1 < vocab_starts_.size(); ++r) widest = std::max(widest, vocab_starts_[r + 1] - vocab_starts_[r]);
  local_logits_.assign(widest, 0.0f);
  gathered_logits_.resize(widest * comm_.size());
  bound_ = true;
}

void LlamaEngine::reset(uint64_t positions) {
  if (positions > config_.context_length())
    throw Error(ErrorCode::InvalidArgument, fmt::format("{} positions exceed the model's context of {}", positions, config_.context_length()));
  if (!bound_) bind();
  positions_ = positions;
  kv_cache_.assign(positions * kv_width_, 0.0f);
  for (size_t i = 0; i < ropes_.size(); ++i)
    if (rope_scaling(i).depends_on_length()) ropes_[i].inv_freq = rotary_frequencies(config_, 0, i == 1), ropes_[i].length = 0;
}

bool LlamaEngine::set_sequence_length(uint64_t length) {
  bool recompute = false;
  for (size_t i = 0; i < ropes_.size(); ++i) {
    const RopeScaling& r = rope_scaling(i);
    RopeTable& t = ropes_[i];
    if (r.type == "dynamic" && length > std::max(t.length, config_.max_position_embeddings)) {
      // transformers recomputes for a longer sequence only, and keeps the keys already cached.
      t.inv_freq = rotary_frequencies(config_, length, i == 1);
      t.length = length;
    } else if (r.type == "longrope" && length > r.original_max_position_embeddings && t.length <= r.original_max_position_embeddings) {
      t.inv_freq = rotary_frequencies(config_, length, i == 1);
      t.length = length;
      recompute = true;
    }
  }
  return recompute;
}

void LlamaEngine::add_all_reduced(const float* bias, const float* post_norm) {
  const uint64_t D = config_.hidden_size;
  if (bias)
    for (uint64_t i = 0; i < D; ++i) partial_[i] += bias[i];
  comm_.all_reduce_sum(partial_.data(), D);
  if (post_norm) rmsnorm(partial_.data(), partial_.data(), post_norm, D, float(config_.rms_norm_eps), config_.norm_weight_offset ? 1.0f : 0.0f);
  const float m = float(config_.residual_multiplier);  // Granite; 1 elsewhere
  if (m != 1.0f)
    for (uint64_t i = 0; i < D; ++i) x_[i] += partial_[i] * m;
  else
    for (uint64_t i = 0; i < D; ++i) x_[i] += partial_[i];
}

uint64_t LlamaEngine::first_visible(const Layer& L, uint64_t pos) {
  // A sliding window shows a position itself and the window - 1 positions before it; a chunk (Llama 4)
  // the positions of its own chunk.
  uint64_t first = L.window && pos + 1 > L.window ? pos + 1 - L.window : 0;
  if (L.chunk) first = std::max(first, pos - pos % L.chunk);
  return first;
}

void LlamaEngine::attention_weights(const Layer& L, uint64_t h, float* scores, uint64_t first, uint64_t pos) const {
  soft_cap(scores + first, pos + 1 - first, config_.attn_logit_softcapping);
  float max = *std::max_element(scores + first, scores + pos + 1);
  if (L.sinks) max = std::max(max, L.sinks[h]);  // gpt-oss: the sink joins the softmax, with no value
  float sum = L.sinks ? std::exp(L.sinks[h] - max) : 0.0f;
  for (uint64_t t = first; t <= pos; ++t) sum += scores[t] = std::exp(scores[t] - max);
  for (uint64_t t = first; t <= pos; ++t) scores[t] /= sum;
}

void LlamaEngine::attention(const Layer& L, uint64_t pos) {
  const uint64_t hd = config_.head_dim, width = L.kv_width, values_at = L.kv_heads * hd;
  const float* cache = kv_cache_.data() + L.kv_offset * positions_;
  const uint64_t first = first_visible(L, pos);
  // One task per query head.
  pool_.run(part_.q_heads, [&](size_t h) {
    const uint64_t kv_local = (part_.q_head0 + h) / L.kv_group - L.kv_head0;
    const float* q = qkv_.data() + h * hd;
    thread_local std::vector<float> scores;
    scores.resize(pos + 1);
    for (uint64_t t = first; t <= pos; ++t) {
      const float* k = cache + t * width + kv_local * hd;
      float s = 0;
      for (uint64_t j = 0; j < hd; ++j) s += q[j] * k[j];
      scores[t] = s * L.scale;
    }
    attention_weights(L, h, scores.data(), first, pos);
    float* out = att_.data() + h * hd;
    std::fill(out, out + hd, 0.0f);
    for (uint64_t t = first; t <= pos; ++t) {
      const float* v = cache + t * width + values_at + kv_local * hd;
      for (uint64_t j = 0; j < hd; ++j) out[j] += scores[t] * v[j];
    }
  });
}

void LlamaEngine::attention_block(const Layer& L, uint64_t pos) {
  const uint64_t D = config_.hidden_size, hd = config_.head_dim, kvw = L.kv_heads * hd, rows = part_.q_heads * hd + 2 * kvw;
  input_norm(L.attn_norm);
  const MatVec qkv{L.qkv, dtype_, rows, D, xb_.data(), qkv_.data()};
  run_matvecs(pool_, {&qkv, 1});
  if (L.qkv_bias)
    for (uint64_t i = 0; i < rows; ++i) qkv_[i] += L.qkv_bias[i];
  float* q = qkv_.data();
  float* k = q + part_.q_heads * hd;
  const float* v = k + kvw;
  if (L.q_norm && config_.qk_norm_whole) whole_projection_norms(L, q, k);
  if (L.q_norm && !config_.qk_norm_whole) {  // Qwen3: each head's q and k normalised over head_dim before they turn
    const float eps = float(config_.rms_norm_eps), offset = config_.norm_weight_offset ? 1.0f : 0.0f;
    for (uint64_t h = 0; h < part_.q_heads; ++h) rmsnorm(q + h * hd, q + h * hd, L.q_norm, hd, eps, offset);
    for (uint64_t h = 0; h < L.kv_heads; ++h) rmsnorm(k + h * hd, k + h * hd, L.k_norm, hd, eps, offset);
  }
  if (L.turns) {
    const RopeTable& turn = ropes_[L.rope];
    if (config_.rope_adjacent_pairs) {  // GLM-4, Llama 4
      rope_adjacent_pairs(q, part_.q_heads, hd, turn.cos, turn.sin);
      rope_adjacent_pairs(k, L.kv_heads, hd, turn.cos, turn.sin);
    } else {
      rope(q, part_.q_heads, hd, turn.cos, turn.sin);
      rope(k, L.kv_heads, hd, turn.cos, turn.sin);
    }
    if (config_.qk_l2_norm) {  // Llama 4: each head's q and k once turned, without a weight
      const float eps = float(config_.rms_norm_eps);
      for (uint64_t h = 0; h < part_.q_heads; ++h) rmsnorm(q + h * hd, q + h * hd, nullptr, hd, eps, 0.0f);
      for (uint64_t h = 0; h < L.kv_heads; ++h) rmsnorm(k + h * hd, k + h * hd, nullptr, hd, eps, 0.0f);
    }
  } else if (config_.attn_floor_scale) {  // Llama 4's temperature tuning of the layers that do not turn
    const float t = float(std::log1p(std::floor(double(pos + 1) / double(config_.attn_floor_scale))) * config_.attn_scale + 1.0);
    for (uint64_t i = 0; i < part_.q_heads * hd; ++i) q[i] *= t;
  }
  float* cached = kv_cache_.data() + L.kv_offset * positions_ + pos * L.kv_width;
  std::copy(k, k + kvw, cached);
  std::copy(v, v + kvw, cached + kvw);
  attention(L, pos);
  const MatVec o{L.o, dtype_, D, part_.q_heads * hd, att_.data(), partial_.data()};
  run_matvecs(pool_, {&o, 1});
  add_all_reduced(L.o_bias, L.post_attn_norm);
}

void LlamaEngine::mlp(const Mlp& m, float* out) { mlp_of(m, xb_.data(), out); }

void LlamaEngine::mlp_of(const Mlp& m, const float* x, float* out) {
  const uint64_t D = config_.hidden_size, ff = m.units;
  const MatVec gate_up{m.gate_up, dtype_, 2 * ff, D, x, gate_up_.data()};
  run_matvecs(pool_, {&gate_up, 1});
  if (m.gate_up_bias)
    for (uint64_t i = 0; i < 2 * ff; ++i) gate_up_[i] += m.gate_up_bias[i];
  if (config_.moe.clamped_swiglu())  // gpt-oss, whose every MLP is an expert
    for (uint64_t u = 0; u < ff; ++u) hidden_[u] = clamped_swiglu(gate_up_[u], gate_up_[ff + u], config_.moe);
  else
    gated_activation(config_.hidden_act, gate_up_.data(), gate_up_.data() + ff, hidden_.data(), ff);
  const MatVec down{m.down, dtype_, D, ff, hidden_.data(), out};
  run_matvecs(pool_, {&down, 1});
}

// An expert held one tensor per projection: a dense MLP's math, its down bias added where this rank
// holds it (gpt-oss's GGUF).
void LlamaEngine::expert_of(const Mlp& m, const float* x, float* out) {
  mlp_of(m, x, out);
  if (m.down_bias)
    for (uint64_t j = 0; j < config_.hidden_size; ++j) out[j] += m.down_bias[j];
}

// The router chooses the experts and their weights (expert_routing.hpp); each chosen expert's
// output is added with its weight, then the shared expert's (Qwen2-MoE's scaled by its gate).
void LlamaEngine::experts(const Layer& L) {
  const MoeConfig& moe = config_.moe;
  const uint64_t D = config_.hidden_size, E = moe.num_experts;
  const MatVec router{reinterpret_cast<const std::byte*>(L.router), DType::F32, E, D, xb_.data(), router_logits_.data()};
  run_matvecs(pool_, {&router, 1});
  if (L.router_bias)
    for (uint64_t e = 0; e < E; ++e) router_logits_[e] += L.router_bias[e];
  std::fill(partial_.begin(), partial_.end(), 0.0f);
  for (const ChosenExpert& chosen : route_token(moe, router_logits_, L.router_correction)) {
    const uint64_t e = chosen.expert;
    if (e < part_.expert0 || e >= part_.expert0 + part_.experts) continue;  // another rank's (expert parallel)
    // Llama 4 weights the expert's input instead of its output.
    const float* x = xb_.data();
    if (moe.weight_input) {
      for (uint64_t j = 0; j < D; ++j) weighted_in_[j] = chosen.weight * xb_[j];
      x = weighted_in_.data();
    }
    if (L.stacked.gate_up)
      run_stacked_expert(pool_, L.stacked, e - part_.expert0, dtype_, D, moe, x, gate_up_.data(), hidden_.data(), expert_out_.data());
    else if (L.stacked.gate)
      run_stacked_halves_expert(pool_, L.stacked, e - part_.expert0, dtype_, D, config_.hidden_act, x, gate_up_.data(), hidden_.data(),
                                expert_out_.data());
    else
      expert_of(L.experts[e - part_.expert0], x, expert_out_.data());
    const float weight = moe.weight_input ? 1.0f : chosen.weight;
    for (uint64_t j = 0; j < D; ++j) partial_[j] += weight * expert_out_[j];
  }
  if (!L.shared.units) return;
  float weight = 1;  // each rank scales its part: the sum is scaled alike
  if (L.shared_gate) {
    float g = 0;
    for (uint64_t j = 0; j < D; ++j) g += L.shared_gate[j] * xb_[j];
    weight = 1.0f / (1.0f + std::exp(-g));
  }
  mlp(L.shared, expert_out_.data());
  if (L.shared.down_bias)  // DeepSeek-V2's mlp_bias, on rank 0
    for (uint64_t j = 0; j < D; ++j) expert_out_[j] += L.shared.down_bias[j];
  for (uint64_t j = 0; j < D; ++j) partial_[j] += weight * expert_out_[j];
}

void LlamaEngine::input_norm(const float* norm) {
  if (norm)
    rmsnorm(xb_.data(), x_.data(), norm, config_.hidden_size, float(config_.rms_norm_eps), config_.norm_weight_offset ? 1.0f : 0.0f);
  else  // OLMo 2: the sublayer reads the residual stream as it is
    std::copy(x_.begin(), x_.end(), xb_.begin());
}

// OLMo 2: q and k each normalised over the whole projection. A rank holds its heads' rows, so the
// sums of squares are added across ranks (a kv head held by several ranks counted once).
void LlamaEngine::whole_projection_norms(const Layer& L, float* q, float* k) {
  const LlamaConfig& c = config_;
  const uint64_t hd = c.head_dim, q_rows = part_.q_heads * hd, kv_rows = L.kv_heads * hd;
  float ss[2] = {0, 0};
  for (uint64_t i = 0; i < q_rows; ++i) ss[0] += q[i] * q[i];
  for (uint64_t i = 0; i < kv_rows; ++i) ss[1] += k[i] * k[i];
  const uint64_t kv_total = c.num_heads / L.kv_group;
  ss[1] /= float(double(comm_.size()) * double(L.kv_heads) / double(kv_total));  // 1 unless kv heads are shared
  comm_.all_reduce_sum(ss, 2);
  const float eps = float(c.rms_norm_eps);
  const float q_scale = 1.0f / std::sqrt(ss[0] / float(c.num_heads * hd) + eps);
  const float k_scale = 1.0f / std::sqrt(ss[1] / float(kv_total * hd) + eps);
  for (uint64_t i = 0; i < q_rows; ++i) q[i] = L.q_norm[i] * (q_scale * q[i]);
  for (uint64_t i = 0; i < kv_rows; ++i) k[i] = L.k_norm[i] * (k_scale * k[i]);
}

void LlamaEngine::ffn_block(const Layer& L) {
  input_norm(L.ffn_norm);
  if (L.router) {
    experts(L);
    add_all_reduced(nullptr, L.post_ffn_norm);
  } else {
    mlp(L.mlp, partial_.data());
    add_all_reduced(L.mlp.down_bias, L.post_ffn_norm);
  }
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
  const uint64_t D = c.hidden_size;
  const float eps = float(c.rms_norm_eps), offset = c.norm_weight_offset ? 1.0f : 0.0f;

  // Vocabulary-parallel embedding: the rank that owns the row provides it.
  const unsigned owner = unsigned(std::upper_bound(vocab_starts_.begin(), vocab_starts_.end() - 1, uint64_t(token)) - vocab_starts_.begin() - 1);
  if (owner == part_.rank) convert(dtype_, embed_ + (token - part_.vocab0) * D * dtype_size(dtype_), DType::F32, x_.data(), D);
  comm_.broadcast(x_.data(), D * sizeof(float), owner);
  if (c.scale_embeddings) {
    const float normalizer = float(std::sqrt(double(D)));
    for (float& v : x_) v *= normalizer;
  }
  if (c.embedding_multiplier != 1)
    for (float& v : x_) v *= float(c.embedding_multiplier);
  for (RopeTable& t : ropes_)
    for (size_t j = 0; j < t.inv_freq.size(); ++j) {
      const float angle = float(pos) * t.inv_freq[j];
      t.cos[j] = std::cos(angle) * t.attention_factor;
      t.sin[j] = std::sin(angle) * t.attention_factor;
    }

  // A pruned layer's skipped sub-block adds nothing to the residual stream.
  for (const Layer& L : layers_) {
    if (L.kv_heads && L.latent.kv_a)
      latent_attention_block(L, pos);
    else if (L.kv_heads)
      attention_block(L, pos);
    if (L.router || L.mlp.units) ffn_block(L);
  }

  rmsnorm(xb_.data(), x_.data(), norm_, D, eps, offset);
  const MatVec head{lm_head_, dtype_, part_.vocab, D, xb_.data(), local_logits_.data()};
  run_matvecs(pool_, {&head, 1});
  soft_cap(local_logits_.data(), part_.vocab, c.final_logit_softcapping);
  if (c.logits_scaling != 1)
    for (uint64_t i = 0; i < part_.vocab; ++i) local_logits_[i] /= float(c.logits_scaling);
  gather_logits();
  return logits_;
}

}  // namespace wl
