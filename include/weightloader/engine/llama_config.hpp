// The model description the engine runs: the hyperparameters of a decoder-only transformer of the
// Llama lineage, read from the checkpoint itself — a Hugging Face config.json (Llama, Mistral,
// Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE, Mixtral, Gemma, Gemma 2, Phi-3, Nemotron-NAS / DeciLM, DeepSeek-V2 and -V3, gpt-oss, GLM-4, Granite-MoE, Llama 4's text model: src/families/), GGUF metadata (the
// architectures the families are written as, read as llama.cpp reads them), Meta's params.json or a llama2.c header. Every field that changes the math is here; one a family's config.json
// sets that the engine cannot honour is refused, naming it, never ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/source.hpp"
#include "weightloader/export.hpp"

namespace wl {

// How rotary frequencies are rescaled for longer contexts (config.json's rope_scaling).
// config.json's rope_scaling, as transformers' modeling_rope_utils reads each type.
struct WL_API RopeScaling {
  std::string type;                 // empty (none), "linear", "llama3", "yarn", "longrope" or "dynamic"
  double factor = 1.0;              // linear, llama3, yarn, dynamic
  double low_freq_factor = 1.0;     // llama3
  double high_freq_factor = 4.0;    // llama3
  // llama3 and yarn: the context length before scaling; longrope: the one that chooses the long factors.
  uint64_t original_max_position_embeddings = 8192;
  double beta_fast = 32, beta_slow = 1;  // yarn: the rotation counts that bound the blended band
  bool truncate = true;                  // yarn: the band's bounds rounded to whole dimensions
  double attention_factor = 1.0;         // yarn, longrope: cos and sin scale by it
  double mscale_all_dim = 0;             // yarn (DeepSeek): latent attention's softmax scale grows by mscale(factor, this)^2
  std::vector<float> short_factor, long_factor;  // longrope: one divisor per rotary frequency
  bool operator==(const RopeScaling&) const = default;
  // Whether the frequencies depend on the length of the sequence (dynamic, longrope).
  bool depends_on_length() const { return type == "dynamic" || type == "longrope"; }
};

// A mixture-of-experts MLP (Mixtral's block_sparse_moe, Qwen2-MoE's mlp with a shared expert,
// DeepSeek's with grouped routing and shared experts).
struct WL_API MoeConfig {
  uint64_t num_experts = 0;          // 0: a dense MLP
  uint64_t experts_per_token = 0;
  uint64_t expert_intermediate_size = 0;
  bool norm_topk_prob = true;        // renormalise the chosen experts' weights to sum to 1
  uint64_t shared_expert_intermediate_size = 0;  // 0: no shared expert
  bool shared_expert_gated = true;   // Qwen2-MoE's shared_expert has a sigmoid gate; DeepSeek's shared_experts add as they are
  uint64_t decoder_sparse_step = 1;  // layer l is sparse when (l + 1) % step == 0 ...
  std::vector<uint64_t> mlp_only_layers;  // ... and it is not one of these ...
  uint64_t first_dense_layers = 0;   // ... nor one of the first ones (DeepSeek's first_k_dense_replace)
  // How the router's logits become scores: a softmax over all experts, or each one's sigmoid
  // (DeepSeek-V3, whose e_score_correction_bias is added to choose the experts, not to weight them).
  enum class Scoring { Softmax, Sigmoid };
  Scoring scoring = Scoring::Softmax;
  bool score_correction_bias = false;
  // Grouped choice (DeepSeek): the experts fall into `groups` consecutive groups, each scored by
  // its best expert (V2's group_limited_greedy) or its best two's sum (V3); only the experts of
  // the best `topk_groups` groups are chosen from. 1 group: every expert competes.
  uint64_t groups = 1, topk_groups = 1;
  bool group_by_top_two = false;
  double routed_scaling_factor = 1;  // the chosen experts' weights are multiplied by it
  // gpt-oss: the router has a bias, the experts' gate, up and down projections too, and they run a
  // clamped SwiGLU: gate = min(gate, limit), up = clamp(up, -limit, limit), hidden = (up + 1) *
  // gate * sigmoid(alpha * gate). limit 0: the family's hidden_act gated MLP.
  bool router_bias = false;
  bool expert_bias = false;
  double swiglu_limit = 0, swiglu_alpha = 0;
  bool clamped_swiglu() const { return swiglu_limit > 0; }
  // Llama 4: each chosen expert's input, not its output, multiplied by its weight (the sigmoid of
  // its router logit).
  bool weight_input = false;
  // How the checkpoint stores the experts: one tensor per expert and projection ([out, in], as
  // their GGUF is read), or stacked as transformers 5 holds gpt-oss's and Llama 4's, read in place:
  // gate_up_proj [experts, hidden, 2 x units] and down_proj [experts, units, hidden] (transposed
  // against nn.Linear), each unit's gate and up in adjacent columns (gpt-oss, with biases) or every
  // unit's gate, then every unit's up (Llama 4).
  enum class Stacks { None, Interleaved, Halves };
  Stacks stacks = Stacks::None;
  bool stacked() const { return stacks != Stacks::None; }
  bool operator==(const MoeConfig&) const = default;
};

// Multi-head latent attention (DeepSeek-V2 and V3). Queries come from the hidden state (q_proj) or
// through a low-rank bottleneck (q_a_proj, q_a_layernorm, q_b_proj); keys and values from one
// compressed latent: kv_a_proj_with_mqa gives kv_lora_rank values, normalised by kv_a_layernorm,
// and one rotary key of qk_rope_head_dim that every head shares; kv_b_proj expands the latent per
// head into qk_nope_head_dim key and v_head_dim value dimensions. Each head's query and key are
// [nope | rope]; the model's head_dim is qk_rope_head_dim (the dimensions that turn).
struct WL_API LatentAttention {
  uint64_t q_lora_rank = 0;   // 0: queries from q_proj
  uint64_t kv_lora_rank = 0;  // 0: not latent attention
  uint64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  // The rotary dimensions turn in adjacent pairs (0, 1), (2, 3), ... (DeepSeek's layout: V2 always,
  // V3's rope_interleave); false: the first half with the second, as other families.
  bool interleaved_rope = true;
  double softmax_scale = 0;   // (qk_nope + qk_rope)^-0.5, times yarn's mscale(factor, mscale_all_dim)^2
  uint64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  // softmax_scale's value under `scaling` (transformers' yarn_apply_mscale: with rope scaling,
  // mscale_all_dim makes the scores sharper).
  double scaled_softmax(const RopeScaling& scaling) const;
  bool operator==(const LatentAttention&) const = default;
};

// One layer's widths in a pruned model whose layers differ (config.json's per-layer intermediate_size
// list, Nemotron-NAS / DeciLM block_configs). 0 is a sub-block the model skips, its residual add too
// (block_configs' no_op): its tensors and its norm are absent.
struct WL_API LayerWidths {
  uint64_t intermediate_size = 0;  // 0: no MLP
  uint64_t num_kv_heads = 0;       // 0: no attention
  bool operator==(const LayerWidths&) const = default;
};

struct WL_API LlamaConfig {
  std::string architecture = "llama";  // config.json's model_type
  uint64_t hidden_size = 0;
  uint64_t intermediate_size = 0;
  uint64_t num_layers = 0;
  uint64_t num_heads = 0;
  uint64_t num_kv_heads = 0;
  uint64_t head_dim = 0;
  // One entry per layer when the layers differ in width (query heads and head_dim stay global);
  // intermediate_size and num_kv_heads then hold the widest layer's. Empty: every layer has those.
  std::vector<LayerWidths> layer_widths;
  uint64_t rotary_dim = 0;  // the leading dimensions of each head that turn (partial_rotary_factor); 0: head_dim
  uint64_t vocab_size = 0;
  uint64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // The sliding-window layers' own rotary settings, where config.json's rope_parameters gives them
  // per layer type (transformers 5: "sliding_attention" beside "full_attention"); theta 0: those
  // layers turn with rope_theta and rope_scaling like the others.
  double sliding_rope_theta = 0;
  RopeScaling sliding_rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;   // q/k/v projections have biases (Llama attention_bias, Qwen2)
  bool o_bias = false;     // the output projection has a bias (Llama attention_bias)
  bool mlp_bias = false;   // gate/up/down projections have biases (Llama mlp_bias)
  std::string hidden_act = "silu";  // silu, gelu (erf) or gelu_pytorch_tanh
  // Sliding-window attention: a position sees itself and the sliding_window - 1 before it, on the
  // layers window_layer() names (Mistral and Phi-3: all; Gemma 2: even ones; Qwen2: from max_window_layers;
  // Gemma 3: as sliding_layers lists).
  uint64_t sliding_window = 0;  // 0: none
  uint64_t sliding_window_every = 1;
  uint64_t sliding_window_from = 0;
  // One flag per layer where config.json lists which layers slide (Gemma 3's layer_types, or its
  // sliding_window_pattern); non-empty, it replaces the every/from rule.
  std::vector<bool> sliding_layers;
  double attn_logit_softcapping = 0;   // 0: none; else scores become cap * tanh(scores / cap)
  double final_logit_softcapping = 0;
  double query_pre_attn_scalar = 0;    // 0: scores scale by 1/sqrt(head_dim), else 1/sqrt(this)
  bool norm_weight_offset = false;     // Gemma: RMSNorm multiplies by (1 + w)
  bool scale_embeddings = false;       // Gemma: embeddings times sqrt(hidden_size)
  bool sandwich_norms = false;         // Gemma 2: post-attention, pre- and post-feedforward norms
  bool glm_norms = false;              // GLM-4's names for those four: post_self_attn_layernorm (the attention's
                                       // output), post_attention_layernorm (the MLP's input), post_mlp_layernorm
  bool rope_adjacent_pairs = false;    // GLM-4: the rotary dimensions turn in pairs (2j, 2j + 1), not j with j + half
  bool qk_norm = false;                // Qwen3: RMSNorm over each head's q and k (q_norm, k_norm: [head_dim]) before rope
  // Granite's multipliers (1, and 0 for attention: none): embeddings times embedding_multiplier,
  // scores times attention_multiplier instead of 1/sqrt(head_dim), each block's output times
  // residual_multiplier as it joins the residual stream, logits divided by logits_scaling.
  double embedding_multiplier = 1, attention_multiplier = 0, residual_multiplier = 1, logits_scaling = 1;
  // OLMo 2: no input norms, each sublayer's output normalised (post_attention_layernorm,
  // post_feedforward_layernorm); q and k normalised over the whole projection (q_norm:
  // [heads * head_dim], k_norm: [kv_heads * head_dim]; across ranks, by a sum of squares all-reduced).
  bool post_norms_only = false;
  bool qk_norm_whole = false;
  // One flag per layer when some layers do not turn (SmolLM3's no_rope_layers, 0: no rope); empty: all turn.
  std::vector<bool> rope_layers;
  // Llama 4 (use_qk_norm): on the layers that turn, each head's q and k, once turned, divided by
  // their root mean square (no weight; rms_norm_eps).
  bool qk_l2_norm = false;
  // Llama 4's chunked attention: on the layers chunked_layers flags, a position attends only to the
  // positions of its own attention_chunk_size-long chunk (the same floor(position / size)).
  uint64_t attention_chunk_size = 0;
  std::vector<bool> chunked_layers;
  // Llama 4's attention temperature tuning (attn_temperature_tuning): on the layers that do not turn,
  // the queries at position p multiplied by 1 + attn_scale * log(1 + floor((p + 1) / floor_scale)).
  // floor_scale 0: none.
  uint64_t attn_floor_scale = 0;
  double attn_scale = 0;
  bool fused_checkpoint = false;       // the checkpoint stores qkv_proj and gate_up_proj (Phi-3)
  bool fused_gate_up = false;          // the checkpoint stores gate_up_proj (Phi-3, GLM-4): gate rows, then up rows
  // The checkpoint stores the shared MLP's gate and up as one tensor (MlpNames::shared_gate_up: gate
  // rows, then up rows), not as gate_proj and up_proj (Granite-MoE-Shared's, not its GGUF).
  bool fused_shared_gate_up = false;
  MoeConfig moe;
  LatentAttention mla;                 // kv_lora_rank 0: q/k/v attention
  // gpt-oss: a learned logit per query head (self_attn.sinks) joins each softmax's denominator, its
  // value nothing: the head may attend to no position.
  bool attention_sinks = false;
  // Layers after the last that predict further tokens (DeepSeek-V3's num_nextn_predict_layers): the
  // engine does not run them, and their tensors are not read.
  uint64_t prediction_layers = 0;
  // The language model of this multimodal model_type (Gemma 3's "gemma3", Family::multimodal): its
  // tensors under language_model., a vision model's beside them, not read. Empty: a language model.
  std::string multimodal;
  std::vector<int32_t> eos_token_ids;  // config.json / generation_config.json / GGUF; empty: the tokenizer's
  std::string origin;      // where it was read from: "config.json", "gguf" or "llama2c"

  uint64_t q_dim() const { return num_heads * head_dim; }
  uint64_t kv_dim() const { return num_kv_heads * head_dim; }
  uint64_t layer_intermediate_size(uint64_t l) const { return layer_widths.empty() ? intermediate_size : layer_widths[l].intermediate_size; }
  uint64_t layer_kv_heads(uint64_t l) const { return layer_widths.empty() ? num_kv_heads : layer_widths[l].num_kv_heads; }
  uint64_t rotary_dims() const { return rotary_dim ? rotary_dim : head_dim; }
  // The rotary frequencies: an odd rotary_dims() rounds up (transformers' arange(0, dims, 2)), each
  // turning a pair of the head's leading 2 * rotary_pairs() dimensions.
  uint64_t rotary_pairs() const { return (rotary_dims() + 1) / 2; }
  bool latent_attention() const { return mla.kv_lora_rank != 0; }
  // The longest sequence the model runs: max_position_embeddings, or what yarn and dynamic scaling
  // extend it to (factor times the context they scale).
  uint64_t context_length() const;
  // The window layer `l` attends within (0: the whole context).
  uint64_t window_layer(uint64_t l) const;
  // Whether layer `l` turns with sliding_rope_theta and sliding_rope_scaling.
  bool sliding_rope_layer(uint64_t l) const { return sliding_rope_theta != 0 && window_layer(l) != 0; }
  bool moe_layer(uint64_t l) const;
  // The chunk layer `l` attends within (0: none).
  uint64_t chunk_layer(uint64_t l) const;
  // Whether layer `l`'s queries and keys turn.
  bool rope_layer(uint64_t l) const { return rope_layers.empty() || rope_layers[l]; }
  // "qwen2: q/k/v biases, ..." — what this configuration exercises, for inspect.
  std::string features() const;
  // A Hugging Face config.json (LlamaForCausalLM) describing this model, for converted checkpoints.
  std::string to_hf_config_json() const;
  bool operator==(const LlamaConfig&) const = default;
};

// Reads the configuration from `source`'s metadata (config.json first, then GGUF keys, then the
// llama2.c header); a missing vocab_size comes from the embedding's rows, and a missing lm_head
// tensor means tied embeddings. ConfigMissing when there is none; ConfigInvalid naming the field
// when a field is missing, malformed, inconsistent, or something the engine cannot run.
WL_API LlamaConfig llama_config_from_source(const WeightSource& source);

// Parses a Hugging Face config.json text (`file` names it in errors).
WL_API LlamaConfig llama_config_from_hf_json(const std::string& text, const std::string& file);

// The eos_token_id of a generation_config.json (an id or a list of them; none when absent).
WL_API std::vector<int32_t> eos_ids_from_generation_config(const std::string& text, const std::string& file);

}  // namespace wl
