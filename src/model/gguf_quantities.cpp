// Each GGUF quantity as a member of LlamaConfig.
#include "model/gguf_quantities.hpp"

#include <cmath>
#include <cstdlib>

namespace wl {

namespace {

// A quantity and its member, read and written as a double (every integer key fits in 53 bits).
struct Member {
  GgufQuantity quantity;
  GgufStored stored;
  double (*get)(const LlamaConfig&);
  void (*set)(LlamaConfig&, double);
};

#define WL_UINT(q, expr) \
  {GgufQuantity::q, GgufStored::UInt32, [](const LlamaConfig& c) { return double(c.expr); }, [](LlamaConfig& c, double v) { c.expr = uint64_t(v); }}
#define WL_REAL(q, expr) \
  {GgufQuantity::q, GgufStored::Float32, [](const LlamaConfig& c) { return double(c.expr); }, [](LlamaConfig& c, double v) { c.expr = v; }}

const Member kMembers[] = {
    WL_UINT(EmbeddingLength, hidden_size),
    WL_UINT(BlockCount, num_layers),
    WL_UINT(FeedForwardLength, intermediate_size),
    WL_UINT(HeadCount, num_heads),
    WL_UINT(HeadCountKv, num_kv_heads),
    // Latent attention's query/key width is nope + rope, and its values v_head_dim wide (read into
    // head_dim and v_head_dim; the reader splits them once rope.dimension_count is known); other
    // attention's values are as wide as its keys (read, nothing to set).
    {GgufQuantity::KeyLength, GgufStored::UInt32,
     [](const LlamaConfig& c) { return double(c.latent_attention() ? c.mla.qk_head_dim() : c.head_dim); },
     [](LlamaConfig& c, double v) { c.head_dim = uint64_t(v); }},
    {GgufQuantity::ValueLength, GgufStored::UInt32,
     [](const LlamaConfig& c) { return double(c.latent_attention() ? c.mla.v_head_dim : c.head_dim); },
     [](LlamaConfig& c, double v) { c.mla.v_head_dim = uint64_t(v); }},
    {GgufQuantity::RopeDimensionCount, GgufStored::UInt32, [](const LlamaConfig& c) { return double(c.rotary_dims()); },
     [](LlamaConfig& c, double v) { c.rotary_dim = uint64_t(v); }},
    WL_UINT(ContextLength, max_position_embeddings),
    WL_REAL(RmsNormEps, rms_norm_eps),
    WL_REAL(RopeFreqBase, rope_theta),
    WL_UINT(VocabSize, vocab_size),
    WL_UINT(SlidingWindow, sliding_window),
    WL_REAL(SlidingRopeFreqBase, sliding_rope_theta),
    WL_REAL(AttnLogitSoftcap, attn_logit_softcapping),
    WL_REAL(FinalLogitSoftcap, final_logit_softcapping),
    WL_UINT(ExpertCount, moe.num_experts),
    WL_UINT(ExpertUsedCount, moe.experts_per_token),
    WL_UINT(ExpertFeedForwardLength, moe.expert_intermediate_size),
    WL_UINT(ExpertSharedFeedForwardLength, moe.shared_expert_intermediate_size),
    WL_REAL(EmbeddingScale, embedding_multiplier),
    WL_REAL(AttentionScale, attention_multiplier),
    WL_REAL(ResidualScale, residual_multiplier),
    WL_REAL(LogitScale, logits_scaling),
    WL_UINT(QLoraRank, mla.q_lora_rank),
    WL_UINT(KvLoraRank, mla.kv_lora_rank),
    WL_UINT(LeadingDenseBlockCount, moe.first_dense_layers),
    // Shared experts of expert_feed_forward_length each: one MLP of their total width.
    {GgufQuantity::ExpertSharedCount, GgufStored::UInt32,
     [](const LlamaConfig& c) {
       return c.moe.expert_intermediate_size ? double(c.moe.shared_expert_intermediate_size / c.moe.expert_intermediate_size) : 0;
     },
     [](LlamaConfig& c, double v) { c.moe.shared_expert_intermediate_size = uint64_t(v) * c.moe.expert_intermediate_size; }},
    WL_REAL(ExpertWeightsScale, moe.routed_scaling_factor),
    {GgufQuantity::ExpertWeightsNorm, GgufStored::Bool, [](const LlamaConfig& c) { return double(c.moe.norm_topk_prob); },
     [](LlamaConfig& c, double v) { c.moe.norm_topk_prob = v != 0; }},
    // llama.cpp's llama_expert_gating_func_type: 1 softmax, 2 sigmoid.
    {GgufQuantity::ExpertGatingFunc, GgufStored::UInt32,
     [](const LlamaConfig& c) { return c.moe.scoring == MoeConfig::Scoring::Sigmoid ? 2.0 : 1.0; },
     [](LlamaConfig& c, double v) { c.moe.scoring = v == 2 ? MoeConfig::Scoring::Sigmoid : MoeConfig::Scoring::Softmax; }},
    // convert_hf_to_gguf.py's 0.1 * mscale_all_dim (0 without yarn, where it changes nothing).
    {GgufQuantity::YarnLogMultiplier, GgufStored::Float32, [](const LlamaConfig& c) { return 0.1 * c.rope_scaling.mscale_all_dim; },
     [](LlamaConfig& c, double v) { c.rope_scaling.mscale_all_dim = v / 0.1; }},
    // llama.cpp's groups (n_expert_groups, n_group_used; 0: none) are each scored by their best two
    // experts; a choice among all groups restricts nothing and is written as none.
    {GgufQuantity::ExpertGroupCount, GgufStored::UInt32,
     [](const LlamaConfig& c) { return c.moe.topk_groups < c.moe.groups ? double(c.moe.groups) : 0; },
     [](LlamaConfig& c, double v) {
       c.moe.groups = v > 1 ? uint64_t(v) : 1;
       c.moe.group_by_top_two = v > 1;
     }},
    {GgufQuantity::ExpertGroupUsedCount, GgufStored::UInt32,
     [](const LlamaConfig& c) { return c.moe.topk_groups < c.moe.groups ? double(c.moe.topk_groups) : 0; },
     [](LlamaConfig& c, double v) { c.moe.topk_groups = v > 0 ? uint64_t(v) : 1; }},
    // llama.cpp's n_moe_layer_step: layer l is sparse when (l + 1) % step == 0, none when 0. Of a
    // model whose sparse layers follow no such step, the step its first sparse layer gives (read
    // back, it differs, and the converter refuses it).
    {GgufQuantity::MoeLayerStep, GgufStored::UInt32,
     [](const LlamaConfig& c) {
       for (uint64_t l = 0; l < c.num_layers; ++l)
         if (c.moe_layer(l)) return double(l + 1);
       return 0.0;
     },
     [](LlamaConfig& c, double v) {
       c.moe.decoder_sparse_step = v > 0 ? uint64_t(v) : 1;
       c.moe.mlp_only_layers.clear();
       for (uint64_t l = 0; v == 0 && l < c.num_layers; ++l) c.moe.mlp_only_layers.push_back(l);
     }},
};

#undef WL_UINT
#undef WL_REAL

const Member& member(GgufQuantity q) {
  for (const Member& m : kMembers)
    if (m.quantity == q) return m;
  std::abort();  // every quantity is listed above
}

}  // namespace

double gguf_quantity(const LlamaConfig& c, GgufQuantity q) { return member(q).get(c); }
void set_gguf_quantity(LlamaConfig& c, GgufQuantity q, double value) { member(q).set(c, value); }
GgufStored gguf_quantity_stored(GgufQuantity q) { return member(q).stored; }

std::optional<double> gguf_absent_value(const GgufKey& k, const LlamaConfig& c) {
  if (k.required) return std::nullopt;
  if (!k.absent_as) return k.absent;
  const double base = gguf_quantity(c, *k.absent_as);
  if (!k.absent_per) return base;
  const double per = gguf_quantity(c, *k.absent_per);
  return per ? std::floor(base / per) : 0;
}

}  // namespace wl
