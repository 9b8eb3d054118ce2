// The families' GGUF keys as data (src/families/, mapped by src/model/gguf_quantities.cpp): each
// architecture's list is one a reader can follow in order, and every key reads back what is written.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "families/family.hpp"
#include "model/gguf_config.hpp"
#include "model/gguf_quantities.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

// Suffixes unique; a default taken from another quantity only from a key read before it; a key
// whose only value the engine runs is never written.
TEST(GgufKeys, EachArchitecturesKeysCanBeReadInOrder) {
  for (const Family* f : families()) {
    if (f->gguf.name.empty()) continue;
    std::set<std::string_view> suffixes;
    std::set<GgufQuantity> before;
    for (const GgufKey& k : gguf_keys(f->gguf)) {
      EXPECT_TRUE(suffixes.insert(k.suffix).second) << f->model_type << " " << k.suffix;
      EXPECT_TRUE(!k.absent_as || before.count(*k.absent_as)) << f->model_type << " " << k.suffix;
      EXPECT_TRUE(!k.absent_per || before.count(*k.absent_per)) << f->model_type << " " << k.suffix;
      EXPECT_TRUE(!k.absent_only || k.write == GgufKey::Write::Never) << f->model_type << " " << k.suffix;
      EXPECT_FALSE(k.required && k.write != GgufKey::Write::Always) << f->model_type << " " << k.suffix;
      before.insert(k.quantity);
    }
  }
}

// Each quantity set through the mapping reads back, and a family's key replaces the common one.
TEST(GgufKeys, QuantitiesReadBackAndFamilyKeysReplaceCommonOnes) {
  LlamaConfig c;
  set_gguf_quantity(c, GgufQuantity::ExpertSharedFeedForwardLength, 48);
  set_gguf_quantity(c, GgufQuantity::AttentionScale, 0.25);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 48u);
  EXPECT_EQ(gguf_quantity(c, GgufQuantity::AttentionScale), 0.25);
  EXPECT_EQ(gguf_quantity_stored(GgufQuantity::AttentionScale), GgufStored::Float32);
  const std::vector<GgufKey> gemma = gguf_keys(family_by_type("gemma")->gguf);
  const auto key_length = std::find_if(gemma.begin(), gemma.end(), [](const GgufKey& k) { return k.suffix == "attention.key_length"; });
  ASSERT_NE(key_length, gemma.end());
  EXPECT_EQ(key_length->write, GgufKey::Write::Always);  // llama.cpp's Gemma converter writes it always
  EXPECT_EQ(std::count_if(gemma.begin(), gemma.end(), [](const GgufKey& k) { return k.suffix == "attention.key_length"; }), 1);
}

// Qwen2-MoE's expert width defaults as llama-model.cpp's: feed_forward_length / expert_used_count.
TEST(GgufKeys, DefaultsFromEarlierKeys) {
  const std::map<std::string, std::string> m{{"general.architecture", "qwen2moe"},
                                             {"qwen2moe.embedding_length", "64"},
                                             {"qwen2moe.block_count", "2"},
                                             {"qwen2moe.feed_forward_length", "96"},
                                             {"qwen2moe.attention.head_count", "4"},
                                             {"qwen2moe.expert_count", "8"},
                                             {"qwen2moe.expert_used_count", "2"}};
  const LlamaConfig c = llama_config_from_gguf(m, "m.gguf");
  EXPECT_EQ(c.architecture, "qwen2_moe");
  EXPECT_EQ(c.moe.expert_intermediate_size, 48u);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 96u);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.num_kv_heads, 4u);
  EXPECT_EQ(c.head_dim, 16u);
}

// llama.cpp's deepseek2: key_length is nope + rope, the shared experts a count of expert widths,
// expert_weights_norm a bool, no expert_gating_func softmax; q_proj in a model of 27 layers only.
TEST(GgufKeys, LatentAttentionWidthsAndDeepseekRouting) {
  std::map<std::string, std::string> m{{"general.architecture", "deepseek2"},
                                       {"deepseek2.embedding_length", "32"},
                                       {"deepseek2.block_count", "27"},
                                       {"deepseek2.feed_forward_length", "48"},
                                       {"deepseek2.attention.head_count", "4"},
                                       {"deepseek2.attention.key_length", "24"},
                                       {"deepseek2.attention.value_length", "12"},
                                       {"deepseek2.rope.dimension_count", "8"},
                                       {"deepseek2.attention.kv_lora_rank", "16"},
                                       {"deepseek2.expert_feed_forward_length", "16"},
                                       {"deepseek2.expert_count", "8"},
                                       {"deepseek2.expert_used_count", "2"},
                                       {"deepseek2.expert_shared_count", "2"},
                                       {"deepseek2.expert_weights_scale", "2.5"},
                                       {"deepseek2.expert_weights_norm", "true"},
                                       {"deepseek2.rope.scaling.yarn_log_multiplier", "0"}};
  const LlamaConfig c = llama_config_from_gguf(m, "m.gguf");
  EXPECT_EQ(c.architecture, "deepseek_v2");
  EXPECT_EQ(c.mla.qk_nope_head_dim, 16u);
  EXPECT_EQ(c.mla.qk_rope_head_dim, 8u);
  EXPECT_EQ(c.head_dim, 8u);
  EXPECT_EQ(c.mla.v_head_dim, 12u);
  EXPECT_EQ(c.mla.q_lora_rank, 0u);
  EXPECT_DOUBLE_EQ(c.mla.softmax_scale, 1.0 / std::sqrt(24.0));
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 32u);
  EXPECT_FALSE(c.moe.shared_expert_gated);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.scoring, MoeConfig::Scoring::Softmax);
  EXPECT_FALSE(c.moe.score_correction_bias);
  EXPECT_EQ(c.moe.groups, 1u);
  EXPECT_DOUBLE_EQ(c.moe.routed_scaling_factor, 2.5);
  {  // V3's: sigmoid gating chooses by exp_probs_b; groups (newer llama.cpp's) scored by their best two
    auto v3 = m;
    v3["deepseek2.expert_gating_func"] = "2";
    v3["deepseek2.expert_group_count"] = "4";
    v3["deepseek2.expert_group_used_count"] = "2";
    const LlamaConfig g = llama_config_from_gguf(v3, "m.gguf");
    EXPECT_EQ(g.moe.scoring, MoeConfig::Scoring::Sigmoid);
    EXPECT_TRUE(g.moe.score_correction_bias);
    EXPECT_EQ(g.moe.groups, 4u);
    EXPECT_EQ(g.moe.topk_groups, 2u);
    EXPECT_TRUE(g.moe.group_by_top_two);
  }
  m["deepseek2.block_count"] = "3";
  std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'deepseek2.attention.q_lora_rank'"), std::string::npos) << msg;
  m["deepseek2.attention.q_lora_rank"] = "24";
  EXPECT_EQ(llama_config_from_gguf(m, "m.gguf").mla.q_lora_rank, 24u);
  m["deepseek2.expert_weights_norm"] = "1";
  msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'deepseek2.expert_weights_norm'"), std::string::npos) << msg;
}

// llama.cpp's gpt-oss: the even layers sliding, the sinks, the biased router and experts, its
// clamped SwiGLU (limit 7, alpha 1.702), and yarn with cos and sin scaled by 0.1 ln(factor) + 1.
TEST(GgufKeys, GptOssAsLlamaCppRunsIt) {
  std::map<std::string, std::string> m{{"general.architecture", "gpt-oss"},
                                       {"gpt-oss.embedding_length", "32"},
                                       {"gpt-oss.block_count", "4"},
                                       {"gpt-oss.feed_forward_length", "16"},
                                       {"gpt-oss.attention.head_count", "4"},
                                       {"gpt-oss.attention.head_count_kv", "2"},
                                       {"gpt-oss.attention.sliding_window", "128"},
                                       {"gpt-oss.expert_feed_forward_length", "16"},
                                       {"gpt-oss.expert_count", "8"},
                                       {"gpt-oss.expert_used_count", "2"},
                                       {"gpt-oss.rope.scaling.type", "yarn"},
                                       {"gpt-oss.rope.scaling.factor", "32"},
                                       {"gpt-oss.rope.scaling.original_context_length", "4096"}};
  const LlamaConfig c = llama_config_from_gguf(m, "m.gguf");
  EXPECT_EQ(c.architecture, "gpt_oss");
  EXPECT_EQ(c.window_layer(0), 128u);
  EXPECT_EQ(c.window_layer(1), 0u);
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_TRUE(c.moe.router_bias && c.moe.expert_bias && c.moe.norm_topk_prob && !c.moe.stacked());
  EXPECT_DOUBLE_EQ(c.moe.swiglu_limit, 7.0);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_alpha, 1.702);
  EXPECT_EQ(c.moe.expert_intermediate_size, 16u);
  EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor, 0.1 * std::log(32.0) + 1.0);
  EXPECT_TRUE(c.rope_scaling.truncate);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 32.0);
  m.erase("gpt-oss.attention.sliding_window");  // llama-model.cpp requires it
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'gpt-oss.attention.sliding_window'"), std::string::npos) << msg;
}

// llama.cpp's llama4: every 4th layer without rope (its queries' temperature tuned by 8192 and 0.1)
// and global, the others chunked by 8192 with q/k L2-normalised (not with 128 experts), every
// interleave_moe_layer_step-th layer sparse, the shared expert as wide as each expert, sigmoid
// weights on the experts' inputs; a sliding_window of 0 (its MobileLLM path) refused.
TEST(GgufKeys, Llama4AsLlamaCppRunsIt) {
  std::map<std::string, std::string> m{{"general.architecture", "llama4"},
                                       {"llama4.embedding_length", "32"},
                                       {"llama4.block_count", "8"},
                                       {"llama4.feed_forward_length", "48"},
                                       {"llama4.attention.head_count", "4"},
                                       {"llama4.expert_feed_forward_length", "16"},
                                       {"llama4.expert_count", "16"},
                                       {"llama4.expert_used_count", "1"},
                                       {"llama4.interleave_moe_layer_step", "2"}};
  const LlamaConfig c = llama_config_from_gguf(m, "m.gguf");
  EXPECT_EQ(c.architecture, "llama4_text");
  EXPECT_EQ(c.intermediate_size, 48u);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 16u);
  EXPECT_TRUE(c.qk_l2_norm && c.rope_adjacent_pairs);
  EXPECT_EQ(c.attention_chunk_size, 8192u);
  EXPECT_EQ(c.attn_floor_scale, 8192u);
  EXPECT_DOUBLE_EQ(c.attn_scale, 0.1);
  EXPECT_TRUE(c.moe.weight_input && !c.moe.norm_topk_prob && !c.moe.shared_expert_gated && !c.moe.stacked());
  EXPECT_EQ(c.moe.scoring, MoeConfig::Scoring::Sigmoid);
  for (uint64_t l = 0; l < 8; ++l) {
    EXPECT_EQ(c.rope_layer(l), l % 4 != 3) << l;
    EXPECT_EQ(c.chunk_layer(l), l % 4 != 3 ? 8192u : 0u) << l;
    EXPECT_EQ(c.moe_layer(l), l % 2 == 1) << l;
  }
  m["llama4.expert_count"] = "128";
  EXPECT_FALSE(llama_config_from_gguf(m, "m.gguf").qk_l2_norm);
  m["llama4.interleave_moe_layer_step"] = "0";  // llama.cpp: no sparse layer
  EXPECT_FALSE(llama_config_from_gguf(m, "m.gguf").moe_layer(1));
  m["llama4.attention.sliding_window"] = "0";
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'llama4.attention.sliding_window'"), std::string::npos) << msg;
}

// Values wider or narrower than keys outside latent attention: llama.cpp would run them, the engine cannot.
TEST(GgufKeys, ValueLengthOtherThanKeyLengthIsRefused) {
  const std::map<std::string, std::string> m{{"general.architecture", "qwen3"},
                                             {"qwen3.embedding_length", "64"},
                                             {"qwen3.block_count", "2"},
                                             {"qwen3.feed_forward_length", "96"},
                                             {"qwen3.attention.head_count", "4"},
                                             {"qwen3.attention.key_length", "32"}};
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'qwen3.attention.value_length'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl
