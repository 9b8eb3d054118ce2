// A model family as the engine reads it: what an architecture's config.json means beyond its
// numbers (which fields it has, their defaults, which layers slide, how it routes experts, which
// engine features it needs). One file per family in this folder, each one definition, listed once
// in families.cpp; the config reader and writer consult these and name no family themselves.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "families/tensor_splits.hpp"

namespace wl {

// How llama.cpp's converter stores a family in GGUF: its general.architecture and what it names,
// stacks and offsets differently from the gguf naming scheme's table (src/naming/name_schemes.cpp).
// Families sharing an architecture (Llama, Mistral, Mixtral: "llama") list what each brings; the
// gguf scheme takes their union.
// A quantity of the model description that a GGUF key carries; src/model/gguf_quantities.cpp maps
// each to the engine's configuration, for the GGUF reader and writer alike.
enum class GgufQuantity {
  EmbeddingLength, BlockCount, FeedForwardLength, HeadCount, HeadCountKv, KeyLength, ValueLength,
  RopeDimensionCount, ContextLength, RmsNormEps, RopeFreqBase, VocabSize,
  SlidingWindow, SlidingRopeFreqBase, AttnLogitSoftcap, FinalLogitSoftcap,
  ExpertCount, ExpertUsedCount, ExpertFeedForwardLength, ExpertSharedFeedForwardLength,
  EmbeddingScale, AttentionScale, ResidualScale, LogitScale,
  QLoraRank, KvLoraRank, LeadingDenseBlockCount, ExpertSharedCount, ExpertWeightsScale, ExpertWeightsNorm,
  ExpertGatingFunc, YarnLogMultiplier, ExpertGroupCount, ExpertGroupUsedCount, MoeLayerStep,
};

// One {arch}.* key as llama.cpp's converter writes it and llama-model.cpp reads it.
struct GgufKey {
  enum class Write {
    Always,         // a quantity of 0 (unknown) is written as its absent value
    WhenSet,        // only when the quantity is not 0
    WhenNotAbsent,  // only when it differs from its absent value
    Never,          // read only (llama.cpp's converter does not write it)
  };
  std::string_view suffix;  // after "{general.architecture}."
  GgufQuantity quantity;
  Write write = Write::Always;
  // When absent: required (llama.cpp refuses the file), else `absent`, or the quantity `absent_as`
  // (of a key before it) divided by `absent_per`'s when given.
  bool required = false;
  double absent = 0;
  std::optional<GgufQuantity> absent_as{}, absent_per{};
  bool absent_only = false;  // the engine runs only the absent value: a file giving another is refused
};

struct GgufArchitecture {
  struct Stem {  // a layer stem (a name without .weight / .bias): the Hugging Face one and GGUF's
    std::string_view canonical, gguf;
    // Both are whole layer names, last component included, where the two differ in it too
    // (DeepSeek-V3's mlp.gate.e_score_correction_bias, GGUF's exp_probs_b.bias).
    bool whole = false;
  };
  // A canonical tensor kept as one slot of a stack: <prefix><expert>.<leaf>.weight in <gguf>.weight
  // (and .bias in <gguf>.bias where `bias`: gpt-oss's); the whole stack's canonical name is
  // <prefix><leaf> (mlp.experts.gate_proj: every expert's gate_proj).
  struct Stack {
    std::string_view canonical_prefix, canonical_leaf, gguf;
    bool bias = false;
  };
  // A canonical tensor stored as parts, each a canonical tensor of its own (named by the layer stems
  // or the stacks): Granite-MoE-Shared's shared_mlp.input_linear as equal row blocks (gate rows, then
  // up rows); transformers 5's expert stacks [experts, hidden, 2 x units] as llama.cpp's converter
  // splits them along the last dim, gate and up columns interleaved (gpt-oss) or in halves (Llama 4),
  // each part transposed into [experts, units, hidden]; one part: stored whole, renamed (transposed).
  struct Split {
    std::string_view canonical;
    std::array<std::string_view, 2> parts;  // the second empty: one part
    bool columns = false;      // split along the last dim, not dim 0
    bool interleaved = false;  // part p holds every n-th row (column) from p, not the p-th block
    bool transposed = false;   // each part's last two dims swapped
    bool whole = false;        // canonical and parts are whole layer names (transformers' stacks have no .weight)
  };
  // How llama.cpp runs rope.scaling.type "yarn" (rope.scaling.factor, rope.scaling.original_context_length):
  // always its default bands (beta_fast 32, beta_slow 1), their bounds rounded outwards
  // (transformers' truncate true), and cos and sin...
  enum class Yarn {
    None,      // yarn is not run: refused
    Unscaled,  // ... unscaled, the architecture's kq_scale carrying yarn's mscale instead (deepseek2)
    Scaled,    // ... times 0.1 ln(factor) + 1, transformers' default attention_factor (gpt-oss)
  };
  // Which attention biases llama.cpp's graph loads.
  enum class Biases {
    AsStored,  // those the file has
    Always,    // q/k/v/o always (gpt-oss): a model without them is refused
    Never,     // none (Llama 4): a model with them is refused
  };
  std::string_view name{};         // general.architecture; empty: the family is not written as GGUF
  std::span<const Stem> layer_stems{};
  bool interleaved_rotary = false; // q/k rows stored interleaved (llama.cpp's converter permutes them)
  float norm_offset = 0;           // norms (q/k norms included) stored as offset + w
  std::span<const Stack> stacks{};
  std::span<const Split> splits{};
  std::span<const GgufKey> keys{};  // beyond every architecture's, or in place of the one of its suffix
  bool tied_head = false;           // llama.cpp ties the head to the embedding: lm_head is not written
  bool head_required = false;       // llama.cpp requires output.weight: a tied head is written as a copy
  bool renormalises_top_k = true;   // llama.cpp renormalises the chosen experts' weights
  Biases attention_biases = Biases::AsStored;
  // llama.cpp's fixed windows: each n-th layer global, the others sliding, or with `chunk` attending
  // within chunks of that many positions (Llama 4: 8192)
  uint64_t global_every = 0;
  uint64_t chunk = 0;
  // llama.cpp scales queries by 1/sqrt(hidden / heads) in models of this many layers (Gemma's 27B),
  // else by 1/sqrt(head_dim).
  uint64_t hidden_query_scale_layers = 0;
  // llama.cpp (at c392e509) reads queries through q_proj only in models of this many layers
  // (DeepSeek-V2-Lite's 27), through q_a/q_b (q_lora_rank) in the others.
  uint64_t q_proj_layers = 0;
  // Written by src/convert/gguf_keys.cpp, read by src/model/gguf_config.cpp.
  Yarn yarn = Yarn::None;
  // llama.cpp's clamped SwiGLU in the experts (gpt-oss: limit 7, alpha 1.702); 0: hidden_act.
  double swiglu_limit = 0, swiglu_alpha = 0;
  // Llama 4 as llama.cpp runs it: each n-th layer without rope (n_no_rope_layer_step), its queries'
  // temperature tuned (floor_scale, attn_scale); q and k of the layers that turn L2-normalised,
  // except in models of `unnormed_experts` experts (the 128-expert Maverick).
  uint64_t no_rope_every = 0;
  uint64_t temperature_floor_scale = 0;
  double temperature_scale = 0;
  uint64_t unnormed_experts = 0;
};

// Where a family keeps a layer's MLP and experts under model.layers.<l>. (Hugging Face's names,
// without .weight): the configuration's shape checks, the engine's declarations and the naming
// layer's per-expert presentation of stacked experts read them here, never a family's name.
struct MlpNames {
  // transformers 5's stacks and router as a checkpoint may store them (layer stems with their leaf),
  // presented one tensor per expert under the per-expert names below (src/naming/stacked_experts.cpp).
  struct Stacks {
    std::array<std::string_view, 2> gate_up{}, down{}, router{};
  };
  std::string_view dense = "mlp";    // a dense layer's MLP: <dense>.gate_proj / up_proj / down_proj (or gate_up_proj)
  std::string_view moe = "mlp";      // a sparse layer's module, holding its router and <moe>.experts
  std::string_view router = "gate";  // the router, under <moe>
  // Each expert's projections, under <moe>.experts.<e>. (unread where the experts are read stacked in
  // place: gpt-oss's and Llama 4's <moe>.experts.gate_up_proj / down_proj).
  std::string_view gate = "gate_proj", up = "up_proj", down = "down_proj";
  // The shared expert's module under the layer (empty: none), its projections (gate and up, or gate
  // rows then up rows in shared_gate_up when that is set), and the sigmoid gate scaling it, under
  // <moe> (empty: ungated).
  std::string_view shared{};
  std::string_view shared_gate_up{}, shared_down = "down_proj";
  std::string_view shared_gate{};
  Stacks stacks{};                   // none: not presented per expert
};

// transformers 5's stacks of the families it stores so (Mixtral's under mlp too), its router mlp.gate.
inline constexpr MlpNames::Stacks kTransformers5Stacks{{"mlp.experts.gate_up_proj"}, {"mlp.experts.down_proj"}, {"mlp.gate.weight"}};
// Mixtral's experts under block_sparse_moe (w1 gate, w3 up, w2 down; the router block_sparse_moe.gate),
// Granite-MoE's too: its checkpoints stack them as block_sparse_moe.input_linear / output_linear
// (router.layer its router), transformers 5's modules as experts.gate_up_proj / down_proj and router.
inline constexpr MlpNames kBlockSparseMoe{.moe = "block_sparse_moe", .gate = "w1", .up = "w3", .down = "w2", .stacks = kTransformers5Stacks};
// llama.cpp's stacks of those experts, one per projection (Mixtral's "llama", Granite-MoE's "granitemoe").
inline constexpr GgufArchitecture::Stack kBlockSparseMoeGgufStacks[] = {{"block_sparse_moe.experts.", "w1", "ffn_gate_exps"},
                                                                        {"block_sparse_moe.experts.", "w3", "ffn_up_exps"},
                                                                        {"block_sparse_moe.experts.", "w2", "ffn_down_exps"}};
inline constexpr MlpNames kGraniteMoeMlp{.moe = "block_sparse_moe", .gate = "w1", .up = "w3", .down = "w2",
                                         .stacks = {{"block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj"},
                                                    {"block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.down_proj"},
                                                    {"block_sparse_moe.router.layer.weight", "block_sparse_moe.router.weight"}}};

// An architecture's keys: those of every architecture (with llama.cpp's defaults where optional),
// each replaced by the architecture's of the same suffix, then its others (src/families/gguf_keys.cpp).
std::vector<GgufKey> gguf_keys(const GgufArchitecture& a);

// Two families' key lists as one (an architecture's keys are one span): Granite-MoE's are Granite's
// and its experts'.
template <size_t A, size_t B>
constexpr std::array<GgufKey, A + B> joined_keys(const GgufKey (&a)[A], const GgufKey (&b)[B]) {
  std::array<GgufKey, A + B> out{};
  for (size_t i = 0; i < A; ++i) out[i] = a[i];
  for (size_t i = 0; i < B; ++i) out[A + i] = b[i];
  return out;
}

struct Family {
  // Which layers attend within sliding_window (config.json's rule; layer_types must agree).
  enum class Window {
    None,         // no sliding window: the field is refused
    All,          // every layer, when sliding_window is set (Mistral, Phi-3)
    FromLayer,    // when use_sliding_window: the layers from max_window_layers (Qwen2, Qwen3)
    AllWhenUsed,  // when use_sliding_window: every layer (Qwen3-MoE, whose transformers 5 code has no max_window_layers)
    EveryOther,   // layers 0, 2, 4, ... (Gemma 2; sliding_window defaults to 4096)
    Listed,       // as layer_types lists; without it Gemma 3's rule (every layer but each
                  // sliding_window_pattern-th; 4096), or SmolLM3's (when use_sliding_window, those without rope)
  };
  // How experts are configured and routed (none: a dense MLP; num_experts above 1 refused).
  enum class Experts {
    None,
    Mixtral,    // num_local_experts of intermediate_size, top-k renormalised (Granite-MoE: the softmax of the
                // chosen logits, the same weights), under block_sparse_moe
    Qwen2Moe,   // num_experts of moe_intermediate_size, a gated shared expert, sparse steps
    Qwen3Moe,   // Qwen2-MoE's without the shared expert (num_local_experts in transformers 5)
    DeepseekV2, // n_routed_experts of moe_intermediate_size, softmax scores, greedy or group-limited
                // choice, shared experts without a gate, routed_scaling_factor, dense first layers
    DeepseekV3, // V2's with sigmoid scores, e_score_correction_bias for choosing, groups scored by
                // their best two, the chosen weights renormalised when norm_topk_prob
    GptOss,     // num_local_experts of intermediate_size stacked (gate and up interleaved, stored
                // transposed, with biases), a biased router, a softmax over the top-k logits, the
                // clamped SwiGLU (swiglu_limit, swiglu_alpha)
    Llama4,     // num_local_experts of intermediate_size stacked (gate columns then up, stored transposed), in
                // moe_layers (every interleave_moe_layer_step-th): the top-k router logits' sigmoids scale the
                // chosen experts' inputs; an ungated shared expert of intermediate_size; dense layers of
                // intermediate_size_mlp
  };
  // Which projections have biases, as the family's transformers code reads it (a field it ignores is ignored).
  enum class Biases {
    Attention,  // attention_bias: q/k/v/o together (Llama, Gemma, Qwen3)
    QkvOnly,    // q/k/v always, never o (Qwen2)
    DeciLm,     // attention_bias or bias; qkv_bias overriding it for q/k/v (as vLLM reads DeciLM)
    QkvDefault, // q/k/v unless qkv_bias_key is false, never o (GLM-4's attention_bias, Qwen2-MoE's qkv_bias)
    None,       // none (Mistral, Mixtral, Phi-3)
  };

  std::string_view model_type;    // config.json's model_type
  std::string_view architecture;  // transformers' class, config.json's architectures
  Window window = Window::None;
  Experts experts = Experts::None;
  Biases biases = Biases::Attention;
  std::string_view qkv_bias_key = "attention_bias";  // Biases::QkvDefault's field
  bool mlp_bias = false;            // mlp_bias is read (Llama, DeciLM, DeepSeek-V2's dense and shared MLPs); elsewhere ignored
  bool follows_layer_types = false; // its transformers code attends as layer_types says
  bool gemma_norms = false;         // (1+w) RMSNorm, embeddings x sqrt(hidden), tied head, the tanh GELU by default
  std::string_view activation_key = "hidden_act";  // the MLP's activation (Gemma 2 and 3: hidden_activation)
  bool gelu_is_tanh = false;        // "gelu" is its legacy name of the tanh approximation (Gemma: transformers converts it)
  bool gemma2 = false;              // soft-caps, query_pre_attn_scalar, four norms per block (Gemma 2 and 3)
  bool attn_softcap = false;        // attn_logit_softcapping applied (Gemma 2; Gemma 3's transformers code never applies it)
  // Flags its transformers code reads whose true the engine cannot follow: refused by name (Gemma 3's
  // use_bidirectional_attention).
  std::span<const std::string_view> unsupported_flags{};
  bool qk_norm = false;             // RMSNorm over each head's q and k before rope (q_norm, k_norm)
  bool tied_by_default = false;     // tie_word_embeddings' default
  bool multipliers = false;         // Granite's embedding/attention/residual multipliers and logits_scaling
  bool no_rope_layers = false;      // some layers do not turn (SmolLM3's no_rope_layers)
  bool post_norms_only = false;     // no input norms; each sublayer's output normalised (OLMo 2)
  bool qk_norm_whole = false;       // q and k normalised over the whole projection, not per head (OLMo 2)
  bool decilm = false;              // per-layer widths from block_configs (hf_layer_widths)
  bool latent_attention = false;    // multi-head latent attention (DeepSeek's q/kv low-rank projections)
  bool attention_sinks = false;     // a learned logit per head in each softmax's denominator (self_attn.sinks)
  // Defaults where config.json leaves a field out (0: the reader's own: attention_bias false,
  // sliding_window 4096 for Gemma 2 and 3 and none for the others, rope_theta 10000).
  bool attention_bias_default = false;
  uint64_t sliding_window_default = 0;
  double rope_theta_default = 0;
  // Gemma 3: the rotary settings per layer type, the sliding layers' base this unless
  // rope_local_base_freq or rope_parameters says (rope_scaling, transformers 4's, for the others only).
  double sliding_rope_theta_default = 0;
  std::string_view rope_scaling_default{};  // JSON: the scaling when config.json gives none (gpt-oss's yarn)
  bool rope_types_as_longrope = false;      // the legacy rope types su and yarn are longrope (Phi-3)
  bool glm_norms = false;           // four norms per block under GLM-4's names: post_self_attn_layernorm on the
                                    // attention's output, post_attention_layernorm before the MLP, post_mlp_layernorm after
  bool rope_adjacent_pairs = false; // the rotary dimensions turn in adjacent pairs (2j, 2j + 1), not halves (GLM-4)
  // partial_rotary_factor is read (Phi-3, GLM-4; DeciLM as vLLM reads it), with this default (GLM-4: 0.5);
  // elsewhere transformers turns whole heads.
  bool partial_rotary = false;
  double partial_rotary_factor = 1;
  bool shared_mlp = false;          // shared_intermediate_size: an ungated MLP beside the experts (Granite-MoE-Shared)
  bool stacked_experts = false;     // transformers reads its experts stacked only (Granite-MoE's input_linear /
                                    // output_linear): written one tensor per expert, they would not load
  bool llama4_attention = false;    // use_qk_norm, attention_chunk_size (layer_types' chunked_attention) and
                                    // attn_temperature_tuning, as Llama 4 reads them
  double rms_norm_eps_default = 0;  // 0: 1e-6
  MlpNames mlp{};                   // where its MLP and experts live (Llama's mlp.gate_proj / up_proj / down_proj)
  // How each of its tensors splits across tensor- and expert-parallel ranks: the shared tables it has
  // (src/families/tensor_splits.hpp), in the order a layer declares them.
  std::span<const SplitTable> tensor_splits{};
  // The multimodal model (transformers' ...ForConditionalGeneration) whose language model this family
  // is: its config.json keeps this family's fields in text_config, its checkpoint the language model's
  // tensors under language_model. (the wrapper prefix), beside vision tensors the engine does not read.
  struct Multimodal {
    std::string_view model_type, architecture;
  } multimodal{};
  GgufArchitecture gguf{};          // how llama.cpp stores it; none: GGUF output is refused
};

// Every family, in the order they are listed (families.cpp).
const std::vector<const Family*>& families();
// The family of a model_type, or of a transformers class; null when none.
const Family* family_by_type(std::string_view model_type);
// The MLP names of model_type's family (Llama's when there is none).
const MlpNames& mlp_names(std::string_view model_type);
// The tensor splits of model_type's family (Llama's when there is none).
std::span<const SplitTable> tensor_splits(std::string_view model_type);
// A split row's name (TensorSplit::name, SplitPart::from) with its leading {placeholder} replaced by
// the MlpNames field of that name ({router}.weight: gate.weight); nullopt for an unknown placeholder.
std::optional<std::string> split_name(std::string_view name, const MlpNames& names);
const Family* family_by_architecture(std::string_view architecture);
// The family whose language model a multimodal model_type (Family::multimodal) wraps; null when none.
const Family* family_by_multimodal_type(std::string_view model_type);
// The family a GGUF of llama.cpp's `architecture` is read as: the first listed that llama.cpp
// stores under it with experts or without as the file has them (Llama or Mixtral for "llama"), and
// with a shared MLP (Family::shared_mlp) or without (Granite-MoE or Granite-MoE-Shared for
// "granitemoe"), else the first with experts as the file has them, else the first; null when none.
const Family* family_by_gguf_architecture(std::string_view architecture, bool experts, bool shared_mlp = false);

}  // namespace wl
