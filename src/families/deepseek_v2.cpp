#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's deepseek2 (at c392e509; gguf-py 0.19 lists the same names): the latent attention's
// projections and norms, kv_b_proj whole (attn_kv_b), the router, the shared experts as one MLP,
// each projection's experts stacked; q/k rows as stored (llama.cpp turns adjacent pairs, as V2 does).
constexpr GgufArchitecture::Stem kDeepseekV2GgufStems[] = {{"self_attn.q_a_proj", "attn_q_a"},
                                                           {"self_attn.q_a_layernorm", "attn_q_a_norm"},
                                                           {"self_attn.q_b_proj", "attn_q_b"},
                                                           {"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
                                                           {"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
                                                           {"self_attn.kv_b_proj", "attn_kv_b"},
                                                           {"mlp.gate", "ffn_gate_inp"},
                                                           {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
                                                           {"mlp.shared_experts.up_proj", "ffn_up_shexp"},
                                                           {"mlp.shared_experts.down_proj", "ffn_down_shexp"}};
constexpr GgufArchitecture::Stack kDeepseekV2GgufStacks[] = {{"mlp.experts.", "gate_proj", "ffn_gate_exps"},
                                                             {"mlp.experts.", "up_proj", "ffn_up_exps"},
                                                             {"mlp.experts.", "down_proj", "ffn_down_exps"}};
// convert_hf_to_gguf.py's DeepseekV2Model; llama-model.cpp's defaults (no expert_gating_func:
// softmax, as the first V2 files).
constexpr GgufKey kDeepseekV2GgufKeys[] = {
    {.suffix = "attention.key_length", .quantity = GgufQuantity::KeyLength, .absent_as = GgufQuantity::EmbeddingLength,
     .absent_per = GgufQuantity::HeadCount},
    {.suffix = "attention.value_length", .quantity = GgufQuantity::ValueLength, .absent_as = GgufQuantity::EmbeddingLength,
     .absent_per = GgufQuantity::HeadCount},
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount, .absent_as = GgufQuantity::KeyLength},
    {.suffix = "leading_dense_block_count", .quantity = GgufQuantity::LeadingDenseBlockCount},
    {.suffix = "attention.q_lora_rank", .quantity = GgufQuantity::QLoraRank},
    {.suffix = "attention.kv_lora_rank", .quantity = GgufQuantity::KvLoraRank, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .required = true},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_shared_count", .quantity = GgufQuantity::ExpertSharedCount, .required = true},
    {.suffix = "expert_weights_scale", .quantity = GgufQuantity::ExpertWeightsScale, .required = true},
    {.suffix = "expert_weights_norm", .quantity = GgufQuantity::ExpertWeightsNorm},
    {.suffix = "expert_gating_func", .quantity = GgufQuantity::ExpertGatingFunc, .absent = 1},
    {.suffix = "rope.scaling.yarn_log_multiplier", .quantity = GgufQuantity::YarnLogMultiplier, .required = true}};
}  // namespace

// DeepSeek-V2: multi-head latent attention (queries through q_proj, or q_a_proj and q_b_proj when
// q_lora_rank is set; keys and values from one normalised latent, the rotary dimensions turning in
// adjacent pairs), experts chosen from softmax scores (greedy, or group_limited_greedy: the best
// topk_group groups by their best expert), shared experts added ungated, the first
// first_k_dense_replace layers dense. llama.cpp's deepseek2 (at c392e509) chooses greedily, and takes
// q_proj for the 27-layer model only: grouped choice, or q_lora_rank null in a model of other depth
// (or set in one of 27 layers), is refused by the converter's read-back.
extern const Family kDeepseekV2{.model_type = "deepseek_v2", .architecture = "DeepseekV2ForCausalLM",
                                .experts = Family::Experts::DeepseekV2, .latent_attention = true,
                                .mlp = {.shared = "mlp.shared_experts", .stacks = kTransformers5Stacks},
                                .gguf = {.name = "deepseek2", .layer_stems = kDeepseekV2GgufStems,
                                         .stacks = kDeepseekV2GgufStacks, .keys = kDeepseekV2GgufKeys, .q_proj_layers = 27}};

}  // namespace wl
