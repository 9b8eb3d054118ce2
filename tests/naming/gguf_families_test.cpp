// The "gguf" naming scheme per llama.cpp architecture: each family's stored names (gguf-py's
// tensor_mapping.py), which architectures store q/k rows interleaved, Gemma's norms stored as
// 1 + w, and Mixtral's experts as one stack per projection.
#include "families/family.hpp"
#include "formats/gguf/gguf_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {
namespace {

using test::GgufBytes;

void expect_pair(std::string_view arch, const char* gguf, const char* hf) {
  const auto canonical = to_canonical("gguf", gguf, arch);
  ASSERT_TRUE(canonical) << arch << " " << gguf;
  EXPECT_EQ(canonical->name, hf) << arch;
  EXPECT_EQ(from_canonical("gguf", hf, arch), gguf) << arch;
}

TEST(GgufFamilies, EachArchitecturesNames) {
  for (const char* arch : {"llama", "qwen2", "gemma", "gemma2", "phi3"}) {
    expect_pair(arch, "token_embd.weight", "model.embed_tokens.weight");
    expect_pair(arch, "blk.1.attn_norm.weight", "model.layers.1.input_layernorm.weight");
    expect_pair(arch, "blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight");
  }
  expect_pair("qwen2", "blk.0.attn_v.bias", "model.layers.0.self_attn.v_proj.bias");
  expect_pair("llama", "blk.0.ffn_gate_inp.weight", "model.layers.0.block_sparse_moe.gate.weight");
  // Gemma 2: the attention's output norm, and the MLP's input and output norms.
  expect_pair("gemma2", "blk.0.post_attention_norm.weight", "model.layers.0.post_attention_layernorm.weight");
  expect_pair("gemma2", "blk.0.ffn_norm.weight", "model.layers.0.pre_feedforward_layernorm.weight");
  expect_pair("gemma2", "blk.0.post_ffw_norm.weight", "model.layers.0.post_feedforward_layernorm.weight");
  expect_pair("gemma", "blk.0.ffn_norm.weight", "model.layers.0.post_attention_layernorm.weight");
  // Phi-3: its fused projections as stored; no separate up_proj or q_proj name is left to collide.
  expect_pair("phi3", "blk.0.attn_qkv.weight", "model.layers.0.self_attn.qkv_proj.weight");
  expect_pair("phi3", "blk.0.ffn_up.weight", "model.layers.0.mlp.gate_up_proj.weight");
  expect_pair("llama", "blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(from_canonical("gguf", "model.layers.0.mlp.up_proj.weight", "phi3"), std::nullopt);
  // The 2026 families: q/k norms (Qwen3, Qwen3-MoE, Gemma 3), Qwen3-MoE's router and stacks.
  for (const char* arch : {"qwen3", "qwen3moe", "gemma3"}) {
    expect_pair(arch, "blk.2.attn_q_norm.weight", "model.layers.2.self_attn.q_norm.weight");
    expect_pair(arch, "blk.2.attn_k_norm.weight", "model.layers.2.self_attn.k_norm.weight");
  }
  expect_pair("qwen3moe", "blk.0.ffn_gate_inp.weight", "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(stack_slot("gguf", "model.layers.1.mlp.experts.2.down_proj.weight", "qwen3moe")->stack, "blk.1.ffn_down_exps.weight");
  expect_pair("gemma3", "blk.0.post_ffw_norm.weight", "model.layers.0.post_feedforward_layernorm.weight");
  EXPECT_EQ(from_canonical("gguf", "model.layers.0.self_attn.q_norm.weight", "llama"), std::nullopt);
  // OLMo 2: only the sublayers' output norms; Granite: llama's names with q/k rows interleaved.
  expect_pair("olmo2", "blk.0.post_attention_norm.weight", "model.layers.0.post_attention_layernorm.weight");
  expect_pair("olmo2", "blk.0.post_ffw_norm.weight", "model.layers.0.post_feedforward_layernorm.weight");
  expect_pair("olmo2", "blk.0.attn_q_norm.weight", "model.layers.0.self_attn.q_norm.weight");
  expect_pair("granite", "blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight");
  EXPECT_TRUE(interleaved_rotary("gguf", "granite"));
  EXPECT_FALSE(interleaved_rotary("gguf", "olmo2"));
  // An architecture the scheme does not know has no names (its tensors keep theirs); other schemes ignore it.
  EXPECT_EQ(to_canonical("gguf", "token_embd.weight", "falcon"), std::nullopt);
  EXPECT_TRUE(to_canonical("meta", "tok_embeddings.weight", "falcon"));
}

TEST(GgufFamilies, RotaryLayoutAndNormOffsetPerArchitecture) {
  EXPECT_TRUE(interleaved_rotary("gguf", "llama"));
  for (const char* arch : {"qwen2", "gemma", "gemma2", "phi3", "falcon"}) EXPECT_FALSE(interleaved_rotary("gguf", arch)) << arch;
  EXPECT_TRUE(interleaved_rotary("meta", "qwen2"));
  for (const char* norm : {"model.norm.weight", "model.layers.3.input_layernorm.weight", "model.layers.0.post_feedforward_layernorm.weight"}) {
    EXPECT_EQ(norm_offset("gguf", norm, "gemma2"), 1.0f) << norm;
    EXPECT_EQ(norm_offset("gguf", norm, "llama"), 0.0f) << norm;
  }
  EXPECT_EQ(norm_offset("gguf", "model.norm.weight", "gemma"), 1.0f);
  // Gemma 3's q/k norms are stored as 1 + w like its other norms; Qwen3's are not offset.
  EXPECT_EQ(norm_offset("gguf", "model.layers.0.self_attn.k_norm.weight", "gemma3"), 1.0f);
  EXPECT_EQ(norm_offset("gguf", "model.layers.0.self_attn.k_norm.weight", "qwen3"), 0.0f);
  EXPECT_EQ(norm_offset("gguf", "model.layers.0.mlp.up_proj.weight", "gemma"), 0.0f);
  EXPECT_EQ(norm_offset("hf", "model.norm.weight", "gemma"), 0.0f);
}

// Families sharing one of llama.cpp's architectures must agree on how it stores rows and norms
// (the scheme takes one rule per architecture); each architecture reads back as its first family.
TEST(GgufFamilies, FamiliesSharingAnArchitectureAgree) {
  for (const Family* f : families()) {
    if (f->gguf.name.empty()) continue;
    const Family* first = family_by_gguf_architecture(f->gguf.name, false);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(f->gguf.interleaved_rotary, first->gguf.interleaved_rotary) << f->model_type;
    EXPECT_EQ(f->gguf.norm_offset, first->gguf.norm_offset) << f->model_type;
    EXPECT_EQ(interleaved_rotary("gguf", f->gguf.name), f->gguf.interleaved_rotary) << f->model_type;
  }
  EXPECT_EQ(family_by_gguf_architecture("llama", false)->model_type, "llama");
  EXPECT_EQ(family_by_gguf_architecture("llama", true)->model_type, "mixtral");  // llama.cpp's llama with experts
  EXPECT_EQ(family_by_gguf_architecture("qwen3moe", false)->model_type, "qwen3_moe");
  EXPECT_EQ(family_by_gguf_architecture("falcon", true), nullptr);
  EXPECT_EQ(family_by_gguf_architecture("granitemoe", true)->model_type, "granitemoe");
  EXPECT_EQ(family_by_gguf_architecture("granitemoe", true, true)->model_type, "granitemoeshared");  // a shared MLP
  EXPECT_EQ(family_by_gguf_architecture("qwen2moe", true, true)->model_type, "qwen2_moe");
}

// Granite-MoE-Shared's fused shared gate/up is stored as two tensors, each named by its layer stem.
TEST(GgufFamilies, SplitTensorsAreStoredAsTheirParts) {
  const StoredParts parts = stored_parts("gguf", "model.layers.1.shared_mlp.input_linear.weight", "granitemoe");
  ASSERT_EQ(parts.names.size(), 2u);
  EXPECT_FALSE(parts.columns || parts.interleaved || parts.transposed);  // row blocks
  EXPECT_EQ(from_canonical("gguf", parts.names[0], "granitemoe"), "blk.1.ffn_gate_shexp.weight");
  EXPECT_EQ(from_canonical("gguf", parts.names[1], "granitemoe"), "blk.1.ffn_up_shexp.weight");
  EXPECT_EQ(to_canonical("gguf", "blk.1.ffn_up_shexp.weight", "granitemoe")->name, parts.names[1]);
  EXPECT_TRUE(stored_parts("gguf", "model.layers.1.shared_mlp.output_linear.weight", "granitemoe").names.empty());
  EXPECT_TRUE(stored_parts("gguf", "model.layers.1.shared_mlp.input_linear.weight", "llama").names.empty());
}

// gpt-oss's and Llama 4's transformers 5 stacks (whole names, no .weight) are stored as llama.cpp's
// converter splits them: gate and up columns interleaved (gpt-oss, the biases too) or in halves
// (Llama 4), transposed; down_proj transposed whole. Each part names a whole stack, which the stacks
// name; read back, a stack is one tensor per expert, biases included where gpt-oss stacks them.
TEST(GgufFamilies, TransformersStacksAreSplitAsLlamaCppStoresThem) {
  const StoredParts gate_up = stored_parts("gguf", "model.layers.2.mlp.experts.gate_up_proj", "gpt-oss");
  ASSERT_EQ(gate_up.names, (std::vector<std::string>{"model.layers.2.mlp.experts.gate_proj.weight", "model.layers.2.mlp.experts.up_proj.weight"}));
  EXPECT_TRUE(gate_up.columns && gate_up.interleaved && gate_up.transposed);
  EXPECT_EQ(from_canonical("gguf", gate_up.names[0], "gpt-oss"), "blk.2.ffn_gate_exps.weight");
  EXPECT_EQ(from_canonical("gguf", gate_up.names[1], "gpt-oss"), "blk.2.ffn_up_exps.weight");
  const StoredParts bias = stored_parts("gguf", "model.layers.2.mlp.experts.gate_up_proj_bias", "gpt-oss");
  ASSERT_EQ(bias.names.size(), 2u);
  EXPECT_TRUE(bias.columns && bias.interleaved && !bias.transposed);
  EXPECT_EQ(from_canonical("gguf", bias.names[1], "gpt-oss"), "blk.2.ffn_up_exps.bias");
  const StoredParts down = stored_parts("gguf", "model.layers.2.mlp.experts.down_proj", "gpt-oss");
  ASSERT_EQ(down.names, std::vector<std::string>{"model.layers.2.mlp.experts.down_proj.weight"});
  EXPECT_TRUE(down.transposed && !down.columns);
  EXPECT_EQ(from_canonical("gguf", stored_parts("gguf", "model.layers.2.mlp.experts.down_proj_bias", "gpt-oss").names.at(0), "gpt-oss"),
            "blk.2.ffn_down_exps.bias");
  const StoredParts halves = stored_parts("gguf", "model.layers.1.feed_forward.experts.gate_up_proj", "llama4");
  ASSERT_EQ(halves.names.size(), 2u);
  EXPECT_TRUE(halves.columns && !halves.interleaved && halves.transposed);
  EXPECT_EQ(from_canonical("gguf", halves.names[1], "llama4"), "blk.1.ffn_up_exps.weight");
  // Only gpt-oss stacks biases; a whole stack is never read back as one tensor.
  EXPECT_EQ(stacked_canonical("gguf", "blk.2.ffn_gate_exps.bias", 3, "gpt-oss"), "model.layers.2.mlp.experts.3.gate_proj.bias");
  EXPECT_EQ(stack_slot("gguf", "model.layers.2.mlp.experts.3.down_proj.bias", "gpt-oss")->stack, "blk.2.ffn_down_exps.bias");
  EXPECT_EQ(stacked_canonical("gguf", "blk.1.ffn_gate_exps.bias", 3, "llama4"), std::nullopt);
  EXPECT_EQ(stacked_canonical("gguf", "blk.1.ffn_gate_exps.weight", 3, "llama4"), "model.layers.1.feed_forward.experts.3.gate_proj.weight");
  EXPECT_EQ(to_canonical("gguf", "blk.2.ffn_gate_exps.weight", "gpt-oss"), std::nullopt);
  EXPECT_TRUE(stored_parts("gguf", "model.layers.2.mlp.experts.gate_up_proj", "llama4").names.empty());
}

TEST(GgufFamilies, GptOssAndLlama4Names) {
  expect_pair("gpt-oss", "blk.0.post_attention_norm.weight", "model.layers.0.post_attention_layernorm.weight");
  expect_pair("gpt-oss", "blk.0.attn_sinks.weight", "model.layers.0.self_attn.sinks");
  expect_pair("gpt-oss", "blk.0.ffn_gate_inp.bias", "model.layers.0.mlp.router.bias");
  expect_pair("gpt-oss", "blk.0.attn_q.bias", "model.layers.0.self_attn.q_proj.bias");
  expect_pair("llama4", "blk.0.ffn_norm.weight", "model.layers.0.post_attention_layernorm.weight");
  expect_pair("llama4", "blk.0.ffn_gate.weight", "model.layers.0.feed_forward.gate_proj.weight");
  expect_pair("llama4", "blk.1.ffn_gate_inp.weight", "model.layers.1.feed_forward.router.weight");
  expect_pair("llama4", "blk.1.ffn_down_shexp.weight", "model.layers.1.feed_forward.shared_expert.down_proj.weight");
  EXPECT_FALSE(interleaved_rotary("gguf", "llama4"));  // llama.cpp turns adjacent pairs, as Llama 4
  EXPECT_FALSE(interleaved_rotary("gguf", "gpt-oss"));
}

// A name whose last component differs too (DeepSeek-V3's choosing bias) maps whole, beside its stem's.
TEST(GgufFamilies, WholeNamesBesideTheirStem) {
  const char* bias = "model.layers.2.mlp.gate.e_score_correction_bias";
  EXPECT_EQ(from_canonical("gguf", bias, "deepseek2"), "blk.2.exp_probs_b.bias");
  EXPECT_EQ(to_canonical("gguf", "blk.2.exp_probs_b.bias", "deepseek2")->name, bias);
  EXPECT_EQ(from_canonical("gguf", "model.layers.2.mlp.gate.weight", "deepseek2"), "blk.2.ffn_gate_inp.weight");
  EXPECT_FALSE(to_canonical("gguf", "blk.2.exp_probs_b.weight", "deepseek2"));
}

TEST(GgufFamilies, MixtralExpertsAreStacks) {
  for (const auto& [leaf, stack] : {std::pair{"w1", "ffn_gate_exps"}, {"w3", "ffn_up_exps"}, {"w2", "ffn_down_exps"}}) {
    const std::string hf = std::string("model.layers.1.block_sparse_moe.experts.3.") + leaf + ".weight";
    const auto slot = stack_slot("gguf", hf, "llama");
    ASSERT_TRUE(slot) << hf;
    EXPECT_EQ(slot->stack, std::string("blk.1.") + stack + ".weight");
    EXPECT_EQ(slot->slot, 3u);
    EXPECT_EQ(stacked_canonical("gguf", slot->stack, 3, "llama"), hf);
  }
  EXPECT_EQ(stack_slot("gguf", "model.layers.1.block_sparse_moe.experts.3.w1.bias", "llama"), std::nullopt);
  EXPECT_EQ(stack_slot("gguf", "model.layers.1.block_sparse_moe.experts.3.w10.weight", "llama"), std::nullopt);
  EXPECT_EQ(stack_slot("gguf", "model.layers.1.block_sparse_moe.experts.3.w1.weight", "qwen2"), std::nullopt);
  EXPECT_EQ(stack_slot("hf", "model.layers.1.block_sparse_moe.experts.3.w1.weight"), std::nullopt);
  EXPECT_EQ(stacked_canonical("gguf", "blk.0.ffn_gate.weight", 0, "llama"), std::nullopt);
  EXPECT_EQ(to_canonical("gguf", "blk.0.ffn_gate_exps.weight", "llama"), std::nullopt);  // a stack, not one tensor
}

// The "gguf" format entry presents each expert of a stack as its own tensor, at its slice of the
// stack's bytes; a "stack" that is not a matrix per slot keeps its stored name.
TEST(GgufFamilies, StacksArePresentedOneTensorPerExpert) {
  GgufBytes b;
  b.header(2, 1).kv_str("general.architecture", "llama");
  b.tensor("blk.0.ffn_up_exps.weight", {2, 1, 3}, 0, 0).tensor("blk.1.ffn_up_exps.weight", {2}, 0, 32).pad();
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 0.f, 0.f, 7.f, 8.f}) b.le<float>(v);
  test::TempDir dir;
  const std::string path = test::make_gguf(dir, b);
  const Catalogue c = gguf_format().read_catalogue(*local_opener()->open(path), *local_opener());
  ASSERT_EQ(c.tensors.size(), 4u);
  const WeightSource s("gguf", path, c);
  EXPECT_EQ(s.at("model.layers.0.block_sparse_moe.experts.0.w3.weight").shape, (Shape{1, 2}));
  EXPECT_EQ(test::values_of(s.load(s.at("model.layers.0.block_sparse_moe.experts.2.w3.weight"))), (std::vector<float>{5, 6}));
  EXPECT_EQ(test::values_of(s.load(s.at("model.layers.0.block_sparse_moe.experts.0.w3.weight"))), (std::vector<float>{1, 2}));
  EXPECT_TRUE(s.find("blk.1.ffn_up_exps.weight"));
}

}  // namespace
}  // namespace wl
