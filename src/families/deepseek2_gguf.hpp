// llama.cpp's deepseek2, which DeepSeek-V2 and V3 are both written as (deepseek_v2.cpp,
// deepseek_v3.cpp): one description, so that the reader, which takes the first family listed under
// the architecture, reads every key and name either writes.
#pragma once

#include "families/family.hpp"

namespace wl {

// The latent attention's projections and norms, kv_b_proj whole (attn_kv_b, as llama.cpp's converter
// at c392e509 writes it; gguf-py 0.19 lists it beside attn_k_b/attn_v_b), the router and V3's
// choosing bias (exp_probs_b.bias), the shared experts as one MLP, each projection's experts
// stacked; q/k rows as stored (llama.cpp turns adjacent pairs, as DeepSeek does).
inline constexpr GgufArchitecture::Stem kDeepseek2GgufStems[] = {{"self_attn.q_a_proj", "attn_q_a"},
                                                                 {"self_attn.q_a_layernorm", "attn_q_a_norm"},
                                                                 {"self_attn.q_b_proj", "attn_q_b"},
                                                                 {"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
                                                                 {"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
                                                                 {"self_attn.kv_b_proj", "attn_kv_b"},
                                                                 {"mlp.gate", "ffn_gate_inp"},
                                                                 {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias", true},
                                                                 {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
                                                                 {"mlp.shared_experts.up_proj", "ffn_up_shexp"},
                                                                 {"mlp.shared_experts.down_proj", "ffn_down_shexp"}};
inline constexpr GgufArchitecture::Stack kDeepseek2GgufStacks[] = {{"mlp.experts.", "gate_proj", "ffn_gate_exps"},
                                                                   {"mlp.experts.", "up_proj", "ffn_up_exps"},
                                                                   {"mlp.experts.", "down_proj", "ffn_down_exps"}};
// convert_hf_to_gguf.py's DeepseekV2Model (V3's too); llama-model.cpp's defaults (no
// expert_gating_func: softmax, as the first V2 files). The groups are gguf-py 0.19's keys, which
// llama.cpp reads since grouped routing came (after c392e509): a group is scored by its best two.
inline constexpr GgufKey kDeepseek2GgufKeys[] = {
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
    {.suffix = "expert_group_count", .quantity = GgufQuantity::ExpertGroupCount, .write = GgufKey::Write::WhenSet},
    {.suffix = "expert_group_used_count", .quantity = GgufQuantity::ExpertGroupUsedCount, .write = GgufKey::Write::WhenSet},
    {.suffix = "rope.scaling.yarn_log_multiplier", .quantity = GgufQuantity::YarnLogMultiplier, .required = true}};
inline constexpr GgufArchitecture kDeepseek2Gguf{.name = "deepseek2", .layer_stems = kDeepseek2GgufStems,
                                                 .stacks = kDeepseek2GgufStacks, .keys = kDeepseek2GgufKeys, .q_proj_layers = 27,
                                                 .yarn = GgufArchitecture::Yarn::Unscaled};

}  // namespace wl
