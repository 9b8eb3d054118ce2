#include "families/family.hpp"

namespace wl {

namespace {
using Split = GgufArchitecture::Split;
// llama.cpp's llama4 as its converter writes it: the feed_forward names (dense MLPs, the router, the
// shared expert), the stacked gate_up_proj split into its halves (gate columns, then up), each
// transposed into [experts, units, hidden], down_proj transposed; q/k rows as stored (llama.cpp
// turns adjacent pairs, as Llama 4 does).
constexpr GgufArchitecture::Stem kLlama4GgufStems[] = {{"feed_forward.gate_proj", "ffn_gate"},
                                                       {"feed_forward.up_proj", "ffn_up"},
                                                       {"feed_forward.down_proj", "ffn_down"},
                                                       {"feed_forward.router", "ffn_gate_inp"},
                                                       {"feed_forward.shared_expert.gate_proj", "ffn_gate_shexp"},
                                                       {"feed_forward.shared_expert.up_proj", "ffn_up_shexp"},
                                                       {"feed_forward.shared_expert.down_proj", "ffn_down_shexp"}};
constexpr GgufArchitecture::Stack kLlama4GgufStacks[] = {{"feed_forward.experts.", "gate_proj", "ffn_gate_exps"},
                                                         {"feed_forward.experts.", "up_proj", "ffn_up_exps"},
                                                         {"feed_forward.experts.", "down_proj", "ffn_down_exps"}};
constexpr Split kLlama4GgufSplits[] = {
    {.canonical = "feed_forward.experts.gate_up_proj", .parts = {"feed_forward.experts.gate_proj.weight", "feed_forward.experts.up_proj.weight"},
     .columns = true, .transposed = true, .whole = true},
    {.canonical = "feed_forward.experts.down_proj", .parts = {"feed_forward.experts.down_proj.weight"}, .transposed = true, .whole = true}};
// convert_hf_to_gguf.py's Llama4Model (feed_forward_length is intermediate_size_mlp, the experts'
// width expert_feed_forward_length); llama-model.cpp's shared expert is as wide as each expert, and
// a sliding_window of 0 would make it run no chunks, no rope-less layers and no temperature tuning
// (its MobileLLM path): refused, as is any other value than the chunk it runs.
constexpr GgufKey kLlama4GgufKeys[] = {
    {.suffix = "rope.dimension_count", .quantity = GgufQuantity::RopeDimensionCount},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "interleave_moe_layer_step", .quantity = GgufQuantity::MoeLayerStep, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .required = true},
    {.suffix = "expert_shared_feed_forward_length", .quantity = GgufQuantity::ExpertSharedFeedForwardLength,
     .write = GgufKey::Write::Never, .absent_as = GgufQuantity::ExpertFeedForwardLength},
    {.suffix = "attention.sliding_window", .quantity = GgufQuantity::SlidingWindow, .write = GgufKey::Write::Never, .absent = 8192,
     .absent_only = true}};
// Dense layers, and sparse ones with stacked experts (transformers 5; one tensor each in its GGUF) and an ungated shared expert.
constexpr SplitTable kLlama4Splits[] = {splits::kEmbedding, splits::kAttention, splits::kMlp, splits::kRouter,
    splits::kHalvesStacks, splits::kExperts, splits::kSharedExpert, splits::kHead};
}  // namespace

// Llama 4's text model (Llama4ForCausalLM): rope in adjacent pairs (rope_theta 500000 unless set)
// except on every no_rope_layer_interval-th layer (no_rope_layers); on the layers that turn, q and k
// L2-normalised after turning (use_qk_norm) and attention within attention_chunk_size-long chunks
// (layer_types' chunked_attention); on the others the queries' temperature tuned (attn_temperature_tuning,
// floor_scale, attn_scale). Its MLPs live under feed_forward: dense layers' gate/up/down_proj of
// intermediate_size_mlp; in moe_layers a router, experts stacked as transformers 5 holds them
// (experts.gate_up_proj [experts, hidden, 2 x intermediate_size]: gate columns, then up; down_proj
// [experts, intermediate_size, hidden]) and an ungated shared_expert. The released Llama 4 models
// (Scout, Maverick) are Llama4ForConditionalGeneration: this language model beside a vision model.
// Written as llama.cpp's llama4, whose graph fixes what config.json may set otherwise: every 4th
// layer without rope and the others chunked by 8192, the temperature tuning's floor_scale 8192 and
// attn_scale 0.1, use_qk_norm (except with 128 experts, where it is off), every
// interleave_moe_layer_step-th layer sparse, SiLU, no attention biases and no rope scaling (its
// llama3 frequencies are not written). Its GGUF is read one tensor per expert.
extern const Family kLlama4Text{.model_type = "llama4_text", .architecture = "Llama4ForCausalLM", .experts = Family::Experts::Llama4,
                                .no_rope_layers = true, .rope_theta_default = 500000, .rope_adjacent_pairs = true,
                                .llama4_attention = true, .rms_norm_eps_default = 1e-5,
                                .mlp = {.dense = "feed_forward", .moe = "feed_forward", .router = "router",
                                        .shared = "feed_forward.shared_expert"},
                                .tensor_splits = kLlama4Splits,
                                .multimodal = {"llama4", "Llama4ForConditionalGeneration"},
                                .gguf = {.name = "llama4", .layer_stems = kLlama4GgufStems, .stacks = kLlama4GgufStacks,
                                         .splits = kLlama4GgufSplits, .keys = kLlama4GgufKeys, .renormalises_top_k = false,
                                         .attention_biases = GgufArchitecture::Biases::Never, .global_every = 4, .chunk = 8192,
                                         .no_rope_every = 4, .temperature_floor_scale = 8192, .temperature_scale = 0.1,
                                         .unnormed_experts = 128}};

}  // namespace wl
