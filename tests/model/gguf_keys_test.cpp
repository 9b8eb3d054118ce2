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
