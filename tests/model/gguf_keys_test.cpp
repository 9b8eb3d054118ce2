// The families' GGUF keys as data (src/families/, mapped by src/model/gguf_quantities.cpp): each
// architecture's list is one a reader can follow in order, and every key reads back what is written.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "families/family.hpp"
#include "model/gguf_config.hpp"
#include "model/gguf_quantities.hpp"

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
  EXPECT_FALSE(gguf_quantity_is_integer(GgufQuantity::AttentionScale));
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

}  // namespace
}  // namespace wl
