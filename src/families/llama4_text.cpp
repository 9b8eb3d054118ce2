#include "families/family.hpp"

namespace wl {

// Llama 4's text model (Llama4ForCausalLM): rope in adjacent pairs (rope_theta 500000 unless set)
// except on every no_rope_layer_interval-th layer (no_rope_layers); on the layers that turn, q and k
// L2-normalised after turning (use_qk_norm) and attention within attention_chunk_size-long chunks
// (layer_types' chunked_attention); on the others the queries' temperature tuned (attn_temperature_tuning,
// floor_scale, attn_scale). Its MLPs live under feed_forward: dense layers' gate/up/down_proj of
// intermediate_size_mlp; in moe_layers a router, experts stacked as transformers 5 holds them
// (experts.gate_up_proj [experts, hidden, 2 x intermediate_size]: gate columns, then up; down_proj
// [experts, intermediate_size, hidden]) and an ungated shared_expert. The released Llama 4 models
// (Scout, Maverick) are Llama4ForConditionalGeneration: this language model beside a vision model. Not written as GGUF.
extern const Family kLlama4Text{.model_type = "llama4_text", .architecture = "Llama4ForCausalLM", .experts = Family::Experts::Llama4,
                                .no_rope_layers = true, .rope_theta_default = 500000, .rope_adjacent_pairs = true,
                                .llama4_attention = true, .rms_norm_eps_default = 1e-5,
                                .mlp = {.dense = "feed_forward", .moe = "feed_forward", .router = "router",
                                        .shared = "feed_forward.shared_expert"},
                                .multimodal = {"llama4", "Llama4ForConditionalGeneration"}};

}  // namespace wl
