// Each GGUF quantity as a member of LlamaConfig.
#include "model/gguf_quantities.hpp"

#include <cmath>

namespace wl {

namespace {

// A quantity and its member, read and written as a double (every integer key fits in 53 bits).
struct Member {
  GgufQuantity quantity;
  bool integer;
  double (*get)(const LlamaConfig&);
  void (*set)(LlamaConfig&, double);
};

#define WL_UINT(q, expr) \
  {GgufQuantity::q, true, [](const LlamaConfig& c) { return double(c.expr); }, [](LlamaConfig& c, double v) { c.expr = uint64_t(v); }}
#define WL_REAL(q, expr) \
  {GgufQuantity::q, false, [](const LlamaConfig& c) { return double(c.expr); }, [](LlamaConfig& c, double v) { c.expr = v; }}

const Member kMembers[] = {
    WL_UINT(EmbeddingLength, hidden_size),
    WL_UINT(BlockCount, num_layers),
    WL_UINT(FeedForwardLength, intermediate_size),
    WL_UINT(HeadCount, num_heads),
    WL_UINT(HeadCountKv, num_kv_heads),
    WL_UINT(KeyLength, head_dim),
    // The engine's values are as wide as its keys: written as head_dim; read, nothing to set.
    {GgufQuantity::ValueLength, true, [](const LlamaConfig& c) { return double(c.head_dim); }, [](LlamaConfig&, double) {}},
    {GgufQuantity::RopeDimensionCount, true, [](const LlamaConfig& c) { return double(c.rotary_dims()); },
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
bool gguf_quantity_is_integer(GgufQuantity q) { return member(q).integer; }

std::optional<double> gguf_absent_value(const GgufKey& k, const LlamaConfig& c) {
  if (k.required) return std::nullopt;
  if (!k.absent_as) return k.absent;
  const double base = gguf_quantity(c, *k.absent_as);
  if (!k.absent_per) return base;
  const double per = gguf_quantity(c, *k.absent_per);
  return per ? std::floor(base / per) : 0;
}

}  // namespace wl
