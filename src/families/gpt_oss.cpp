#include "families/family.hpp"

namespace wl {

// gpt-oss: q/k/v/o with biases (attention_bias true by default), a learned sink logit per head in
// each softmax, every other layer sliding (layer_types; sliding_window 128 by default), yarn rope
// (rope_theta 150000 and transformers' yarn by default), and in every layer num_local_experts experts
// of intermediate_size: a biased router whose top-k logits are softmaxed, experts stacked as transformers 5 holds them
// (mlp.experts.gate_up_proj [experts, hidden, 2 x units] with gate and up interleaved, down_proj
// [experts, units, hidden], both with biases; MXFP4 _blocks/_scales decoded to that on load), each
// a clamped SwiGLU. Not written as GGUF (llama.cpp's gpt-oss keeps the experts in MXFP4).
extern const Family kGptOss{.model_type = "gpt_oss", .architecture = "GptOssForCausalLM", .window = Family::Window::EveryOther,
                            .experts = Family::Experts::GptOss, .follows_layer_types = true, .attention_sinks = true,
                            .attention_bias_default = true, .sliding_window_default = 128, .rope_theta_default = 150000,
                            .rope_scaling_default = R"({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                                        "truncate": false, "original_max_position_embeddings": 4096})",
                            .mlp = {.router = "router"}};

}  // namespace wl
