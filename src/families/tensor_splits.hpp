// How each tensor of a family's checkpoint splits across tensor- and expert-parallel ranks, as data:
// rows naming a parameter (vLLM's name: qkv_proj, gate_up_proj), its dimensions as quantities, the
// dimension a rank takes its range of, and the checkpoint tensors (parts) it reads. Families name
// the shared tables below (Family::tensor_splits); engine/tensor_parallel.cpp walks them for each
// rank. A layer's norms are not listed: every one is whole on every rank (engine's layer_norms).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace wl {

// A quantity a dimension spans; a split dimension takes the rank's range of it
// (engine/tensor_parallel.hpp's RankPartition).
enum class Extent : uint8_t {
  None,         // no further dimension
  One,
  Hidden,
  HeadDim,
  Vocab,        // vocabulary rows
  QueryHeads,
  QueryRows,    // query heads x head_dim
  KvRows,       // the layer's kv heads x head_dim (a rank reads a replicated kv head when ranks outnumber them)
  Units,        // the layer's MLP units (whole quantisation blocks where the width allows)
  ExpertUnits,  // each expert's units (all of them under expert parallelism)
  PairedExpertUnits,  // 2 x each expert's units, a unit's gate and up adjacent (gpt-oss's stacks)
  SharedUnits,  // the shared expert's units
  Experts,      // the experts a rank holds: all of them, or a block of whole ones under expert parallelism
  // Latent attention (DeepSeek): the low ranks, the kv latent with its rotary key, and per query head
  // its query (nope + rope), key-and-value (nope + v) and value rows.
  QLoraRank, KvLoraRank, KvLatentRows, LatentQueryRows, LatentKvRows, LatentValueRows,
  Parts,        // the split dimension of a parameter read from parts: their ranges, one after another
};

// Where a row's tensor lives on the ranks.
enum class Placement : uint8_t {
  Split,     // each rank its range along the split dimension
  Whole,     // every rank all of it (norms, routers, latent projections)
  RankZero,  // a row-parallel bias, added once after the all-reduce: on rank 0 only; an expert's, under
             // expert parallelism, on the rank holding the expert
};

// When a row (or a table) applies: a configuration's feature, as the checkpoint has it.
enum class When : uint8_t {
  Always, Never,
  QkvBias, OBias, MlpBias, QkNorm, QkNormWhole, Sinks, Untied,
  QLora, NoQLora,                                       // latent attention's queries through q_a/q_b, or q_proj
  RouterBias, ExpertBias, ScoreCorrectionBias, SharedExpert, SharedExpertGated,
  PerExpertTensors, InterleavedStacks, HalvesStacks,   // how the checkpoint stores the experts
  ExpertsSplit, ExpertsWhole,                           // tensor parallel inside each expert, or expert parallel
  FusedQkv, FusedGateUp, FusedSharedGateUp,             // the checkpoint stores the fused tensor
};

// A checkpoint tensor a parameter reads its rows from: the rank's range of `rows`, after `after`
// whole extents of it (Llama 4's up half of gate_up_proj). Names in braces are the family's MlpNames:
// {router}, {gate}, {up}, {down}, {shared_gate_up}, {shared_down}, {shared_gate}.
struct SplitPart {
  std::string_view from;
  Extent rows = Extent::None;
  uint8_t after = 0;
};

struct TensorSplit {
  std::string_view name;                 // under the table's module
  std::array<Extent, 3> dims{};
  uint8_t split = 0;                     // the dimension a Split row's rank range is taken along
  Placement placement = Placement::Split;
  std::array<When, 2> when{};            // both must hold
  bool f32 = false;                      // stored in F32 (norms, biases, routers), else in the model's dtype
  std::array<SplitPart, 3> parts{};      // none: the checkpoint tensor of its own name
  // A fused checkpoint tensor (fused_from, or the row's own name) holding every part's whole rows in
  // order, read instead of the parts when `fused` holds.
  When fused = When::Never;
  std::string_view fused_from{};
};

// Where a table's rows live: their name prefix, and the layers (or experts) they repeat over.
enum class Module : uint8_t {
  ModelStart,  // top-level, declared before the layers
  ModelEnd,    // top-level, after them
  Attention,   // model.layers.<l>.self_attn., on layers with attention
  Mlp,         // the dense MLP (MlpNames::dense), on dense layers with one
  Moe,         // the sparse layer's module (MlpNames::moe): router, stacks
  Expert,      // <moe>.experts.<e>., for each expert the rank holds
  Shared,      // the shared expert (MlpNames::shared)
};

struct SplitTable {
  Module module;
  std::span<const TensorSplit> rows;
  When when = When::Always;
};

namespace splits {

using enum Extent;
using enum Placement;
using W = When;

inline constexpr TensorSplit kEmbeddingRows[] = {{.name = "model.embed_tokens.weight", .dims = {Vocab, Hidden}}};
inline constexpr TensorSplit kHeadRows[] = {
    {.name = "model.norm.weight", .dims = {Hidden}, .placement = Whole, .f32 = true},
    {.name = "lm_head.weight", .dims = {Vocab, Hidden}, .when = {W::Untied}}};

// q/k/v column-parallel by head into vLLM's qkv_proj, o_proj row-parallel.
inline constexpr TensorSplit kAttentionRows[] = {
    {.name = "qkv_proj.weight", .dims = {Parts, Hidden},
     .parts = {{{"q_proj.weight", QueryRows}, {"k_proj.weight", KvRows}, {"v_proj.weight", KvRows}}}, .fused = W::FusedQkv},
    {.name = "qkv_proj.bias", .dims = {Parts}, .when = {W::QkvBias}, .f32 = true,
     .parts = {{{"q_proj.bias", QueryRows}, {"k_proj.bias", KvRows}, {"v_proj.bias", KvRows}}}, .fused = W::FusedQkv},
    {.name = "o_proj.weight", .dims = {Hidden, QueryRows}, .split = 1},
    {.name = "o_proj.bias", .dims = {Hidden}, .placement = RankZero, .when = {W::OBias}, .f32 = true}};
// Per-head q/k norms (Qwen3, Gemma 3): one weight per head dimension, on every rank.
inline constexpr TensorSplit kQkNormRows[] = {
    {.name = "q_norm.weight", .dims = {HeadDim}, .placement = Whole, .when = {W::QkNorm}, .f32 = true},
    {.name = "k_norm.weight", .dims = {HeadDim}, .placement = Whole, .when = {W::QkNorm}, .f32 = true}};
// OLMo 2's norms over the whole projection: each rank its heads' rows.
inline constexpr TensorSplit kQkNormWholeRows[] = {
    {.name = "q_norm.weight", .dims = {QueryRows}, .when = {W::QkNormWhole}, .f32 = true},
    {.name = "k_norm.weight", .dims = {KvRows}, .when = {W::QkNormWhole}, .f32 = true}};
// gpt-oss's sinks: one per query head, split with the heads.
inline constexpr TensorSplit kSinkRows[] = {{.name = "sinks", .dims = {QueryHeads}, .when = {W::Sinks}, .f32 = true}};
// Latent attention: the projections into the latents and their norms whole (each rank computes the
// latents itself), q_b_proj (or q_proj) and kv_b_proj column-parallel by head, o_proj row-parallel.
inline constexpr TensorSplit kLatentAttentionRows[] = {
    {.name = "q_a_proj.weight", .dims = {QLoraRank, Hidden}, .placement = Whole, .when = {W::QLora}},
    {.name = "q_a_proj.bias", .dims = {QLoraRank}, .placement = Whole, .when = {W::QLora, W::QkvBias}, .f32 = true},
    {.name = "q_a_layernorm.weight", .dims = {QLoraRank}, .placement = Whole, .when = {W::QLora}, .f32 = true},
    {.name = "q_b_proj.weight", .dims = {LatentQueryRows, QLoraRank}, .when = {W::QLora}},
    {.name = "q_proj.weight", .dims = {LatentQueryRows, Hidden}, .when = {W::NoQLora}},
    {.name = "kv_a_proj_with_mqa.weight", .dims = {KvLatentRows, Hidden}, .placement = Whole},
    {.name = "kv_a_proj_with_mqa.bias", .dims = {KvLatentRows}, .placement = Whole, .when = {W::QkvBias}, .f32 = true},
    {.name = "kv_a_layernorm.weight", .dims = {KvLoraRank}, .placement = Whole, .f32 = true},
    {.name = "kv_b_proj.weight", .dims = {LatentKvRows, KvLoraRank}},
    {.name = "o_proj.weight", .dims = {Hidden, LatentValueRows}, .split = 1},
    {.name = "o_proj.bias", .dims = {Hidden}, .placement = RankZero, .when = {W::OBias}, .f32 = true}};

// An MLP: gate and up column-parallel by unit into vLLM's gate_up_proj (gate rows, then up rows),
// down_proj row-parallel.
inline constexpr TensorSplit kMlpRows[] = {
    {.name = "gate_up_proj.weight", .dims = {Parts, Hidden}, .parts = {{{"gate_proj.weight", Units}, {"up_proj.weight", Units}}},
     .fused = W::FusedGateUp},
    {.name = "gate_up_proj.bias", .dims = {Parts}, .when = {W::MlpBias}, .f32 = true,
     .parts = {{{"gate_proj.bias", Units}, {"up_proj.bias", Units}}}, .fused = W::FusedGateUp},
    {.name = "down_proj.weight", .dims = {Hidden, Units}, .split = 1},
    {.name = "down_proj.bias", .dims = {Hidden}, .placement = RankZero, .when = {W::MlpBias}, .f32 = true}};
// Each expert an MLP under the family's names, split inside (or whole under expert parallelism);
// biases as gpt-oss's GGUF has them.
inline constexpr TensorSplit kExpertRows[] = {
    {.name = "gate_up_proj.weight", .dims = {Parts, Hidden}, .parts = {{{"{gate}.weight", ExpertUnits}, {"{up}.weight", ExpertUnits}}}},
    {.name = "gate_up_proj.bias", .dims = {Parts}, .when = {W::ExpertBias}, .f32 = true,
     .parts = {{{"{gate}.bias", ExpertUnits}, {"{up}.bias", ExpertUnits}}}},
    {.name = "down_proj.weight", .dims = {Hidden, Parts}, .split = 1, .parts = {{{"{down}.weight", ExpertUnits}}}},
    {.name = "down_proj.bias", .dims = {Hidden}, .placement = RankZero, .when = {W::ExpertBias}, .f32 = true}};
// The shared expert: split inside as an MLP, its gate and up possibly fused in the checkpoint
// (Granite-MoE-Shared's shared_mlp.input_linear).
inline constexpr TensorSplit kSharedExpertRows[] = {
    {.name = "gate_up_proj.weight", .dims = {Parts, Hidden},
     .parts = {{{"gate_proj.weight", SharedUnits}, {"up_proj.weight", SharedUnits}}}, .fused = W::FusedSharedGateUp,
     .fused_from = "{shared_gate_up}.weight"},
    {.name = "gate_up_proj.bias", .dims = {Parts}, .when = {W::MlpBias}, .f32 = true,
     .parts = {{{"gate_proj.bias", SharedUnits}, {"up_proj.bias", SharedUnits}}}, .fused = W::FusedSharedGateUp,
     .fused_from = "{shared_gate_up}.bias"},
    {.name = "down_proj.weight", .dims = {Hidden, Parts}, .split = 1, .parts = {{{"{shared_down}.weight", SharedUnits}}}},
    {.name = "down_proj.bias", .dims = {Hidden}, .placement = RankZero, .when = {W::MlpBias}, .f32 = true}};

// The router, whole on every rank; DeepSeek-V3's choice bias; Qwen2-MoE's sigmoid gate on the shared
// expert.
inline constexpr TensorSplit kRouterRows[] = {
    {.name = "{router}.weight", .dims = {Experts, Hidden}, .placement = Whole, .f32 = true},
    {.name = "{router}.bias", .dims = {Experts}, .placement = Whole, .when = {W::RouterBias}, .f32 = true}};
inline constexpr TensorSplit kScoreCorrectionRows[] = {
    {.name = "gate.e_score_correction_bias", .dims = {Experts}, .placement = Whole, .when = {W::ScoreCorrectionBias}, .f32 = true}};
inline constexpr TensorSplit kSharedExpertGateRows[] = {
    {.name = "{shared_gate}.weight", .dims = {One, Hidden}, .placement = Whole, .when = {W::SharedExpert, W::SharedExpertGated},
     .f32 = true}};

// Stacked experts (transformers 5's, read in place): split inside along the units, or with expert
// parallelism whole experts along dim 0. gpt-oss's gate_up_proj [experts, hidden, 2 x units] has each
// unit's gate and up adjacent; down's bias is added once.
inline constexpr TensorSplit kInterleavedStackRows[] = {
    {.name = "experts.gate_up_proj", .dims = {Experts, Hidden, PairedExpertUnits}, .split = 2},
    {.name = "experts.gate_up_proj_bias", .dims = {Experts, PairedExpertUnits}, .split = 1, .f32 = true},
    {.name = "experts.down_proj", .dims = {Experts, ExpertUnits, Hidden}, .split = 1},
    {.name = "experts.down_proj_bias", .dims = {Experts, Hidden}, .placement = RankZero, .f32 = true}};
// Llama 4's gate_up_proj holds every unit's gate, then every unit's up: split inside, read as two
// stacks of the rank's units (experts.gate_proj, experts.up_proj); whole experts kept as stored.
inline constexpr TensorSplit kHalvesStackRows[] = {
    {.name = "experts.gate_proj", .dims = {Experts, Hidden, Parts}, .split = 2, .when = {W::ExpertsSplit},
     .parts = {{{"experts.gate_up_proj", ExpertUnits}}}},
    {.name = "experts.up_proj", .dims = {Experts, Hidden, Parts}, .split = 2, .when = {W::ExpertsSplit},
     .parts = {{{"experts.gate_up_proj", ExpertUnits, 1}}}},
    {.name = "experts.gate_up_proj", .dims = {Experts, Hidden, PairedExpertUnits}, .split = 2, .when = {W::ExpertsWhole}},
    {.name = "experts.down_proj", .dims = {Experts, ExpertUnits, Hidden}, .split = 1}};

// The tables, each under its module.
inline constexpr SplitTable kEmbedding{Module::ModelStart, kEmbeddingRows};
inline constexpr SplitTable kHead{Module::ModelEnd, kHeadRows};
inline constexpr SplitTable kAttention{Module::Attention, kAttentionRows};
inline constexpr SplitTable kQkNorm{Module::Attention, kQkNormRows};
inline constexpr SplitTable kQkNormWhole{Module::Attention, kQkNormWholeRows};
inline constexpr SplitTable kSinks{Module::Attention, kSinkRows};
inline constexpr SplitTable kLatentAttention{Module::Attention, kLatentAttentionRows};
inline constexpr SplitTable kMlp{Module::Mlp, kMlpRows};
inline constexpr SplitTable kRouter{Module::Moe, kRouterRows};
inline constexpr SplitTable kScoreCorrection{Module::Moe, kScoreCorrectionRows};
inline constexpr SplitTable kExperts{Module::Expert, kExpertRows, When::PerExpertTensors};
inline constexpr SplitTable kInterleavedStacks{Module::Moe, kInterleavedStackRows, When::InterleavedStacks};
inline constexpr SplitTable kHalvesStacks{Module::Moe, kHalvesStackRows, When::HalvesStacks};
inline constexpr SplitTable kSharedExpert{Module::Shared, kSharedExpertRows, When::SharedExpert};
inline constexpr SplitTable kSharedExpertGate{Module::Moe, kSharedExpertGateRows};

// Most families' whole model: the embedding, dense attention and MLP, the head.
inline constexpr SplitTable kDense[] = {kEmbedding, kAttention, kMlp, kHead};
// ... with per-head q/k norms (Qwen3, Gemma 3).
inline constexpr SplitTable kDenseQkNorm[] = {kEmbedding, kAttention, kQkNorm, kMlp, kHead};
// Experts one tensor each, beside the dense layers (Mixtral, Qwen3-MoE, Granite-MoE).
inline constexpr SplitTable kSparse[] = {kEmbedding, kAttention, kMlp, kRouter, kExperts, kHead};

}  // namespace splits

}  // namespace wl
