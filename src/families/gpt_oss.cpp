#include "families/family.hpp"

namespace wl {

namespace {
using Split = GgufArchitecture::Split;
// llama.cpp's gpt-oss as its converter writes a checkpoint of dense experts: the norm after the
// attention, the sinks and the biased router under its names; the stacks split as it splits them
// (gate_up_proj's interleaved columns into ffn_gate_exps and ffn_up_exps, each transposed into
// [experts, units, hidden], down_proj transposed), each with its biases.
constexpr GgufArchitecture::Stem kGptOssGgufStems[] = {{"post_attention_layernorm", "post_attention_norm"},
                                                       {"self_attn.sinks", "attn_sinks.weight", true},
                                                       {"mlp.router", "ffn_gate_inp"}};
constexpr GgufArchitecture::Stack kGptOssGgufStacks[] = {{"mlp.experts.", "gate_proj", "ffn_gate_exps", true},
                                                         {"mlp.experts.", "up_proj", "ffn_up_exps", true},
                                                         {"mlp.experts.", "down_proj", "ffn_down_exps", true}};
constexpr Split kGptOssGgufSplits[] = {
    {.canonical = "mlp.experts.gate_up_proj", .parts = {"mlp.experts.gate_proj.weight", "mlp.experts.up_proj.weight"},
     .columns = true, .interleaved = true, .transposed = true, .whole = true},
    {.canonical = "mlp.experts.gate_up_proj_bias", .parts = {"mlp.experts.gate_proj.bias", "mlp.experts.up_proj.bias"},
     .columns = true, .interleaved = true, .whole = true},
    {.canonical = "mlp.experts.down_proj", .parts = {"mlp.experts.down_proj.weight"}, .transposed = true, .whole = true},
    {.canonical = "mlp.experts.down_proj_bias", .parts = {"mlp.experts.down_proj.bias"}, .whole = true}};
// convert_hf_to_gguf.py's GptOssModel: the window and the experts' width (llama-model.cpp requires both).
constexpr GgufKey kGptOssGgufKeys[] = {
    {.suffix = "attention.sliding_window", .quantity = GgufQuantity::SlidingWindow, .required = true},
    {.suffix = "expert_count", .quantity = GgufQuantity::ExpertCount, .required = true},
    {.suffix = "expert_used_count", .quantity = GgufQuantity::ExpertUsedCount, .required = true},
    {.suffix = "expert_feed_forward_length", .quantity = GgufQuantity::ExpertFeedForwardLength, .required = true}};
// Sinks split with their heads; experts stacked (transformers 5) or one tensor each (its GGUF).
constexpr SplitTable kGptOssSplits[] = {splits::kEmbedding, splits::kAttention, splits::kSinks, splits::kRouter,
    splits::kInterleavedStacks, splits::kExperts, splits::kHead};
}  // namespace

// gpt-oss: q/k/v/o with biases (attention_bias true by default), a learned sink logit per head in
// each softmax, every other layer sliding (layer_types; sliding_window 128 by default), yarn rope
// (rope_theta 150000 and transformers' yarn by default), and in every layer num_local_experts experts
// of intermediate_size: a biased router whose top-k logits are softmaxed, experts stacked as transformers 5 holds them
// (mlp.experts.gate_up_proj [experts, hidden, 2 x units] with gate and up interleaved, down_proj
// [experts, units, hidden], both with biases; MXFP4 _blocks/_scales decoded to that on load), each
// a clamped SwiGLU. Written as llama.cpp's gpt-oss, whose graph fixes what config.json may set
// otherwise: the SwiGLU's limit 7 and alpha 1.702, the even layers sliding, yarn's default bands
// with their bounds rounded (transformers' truncate true; gpt-oss's own false is refused), q/k/v/o
// biases and an untied head (a tied one written as a copy). Its GGUF is read one tensor per expert.
extern const Family kGptOss{.model_type = "gpt_oss", .architecture = "GptOssForCausalLM", .window = Family::Window::EveryOther,
                            .experts = Family::Experts::GptOss, .follows_layer_types = true, .attention_sinks = true,
                            .attention_bias_default = true, .sliding_window_default = 128, .rope_theta_default = 150000,
                            .rope_scaling_default = R"({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                                        "truncate": false, "original_max_position_embeddings": 4096})",
                            .mlp = {.router = "router"},
                            .tensor_splits = kGptOssSplits,
                            .gguf = {.name = "gpt-oss", .layer_stems = kGptOssGgufStems, .stacks = kGptOssGgufStacks,
                                     .splits = kGptOssGgufSplits, .keys = kGptOssGgufKeys, .head_required = true,
                                     .attention_biases = GgufArchitecture::Biases::Always,
                                     .yarn = GgufArchitecture::Yarn::Scaled, .swiglu_limit = 7, .swiglu_alpha = 1.702}};

}  // namespace wl
