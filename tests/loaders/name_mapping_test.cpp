#include "weightloader/name_mapping.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl {
namespace {

TEST(NameMapping, EmptyMapsToItself) {
  NameMapping m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.map("model.layers.0.w"), "model.layers.0.w");
}

TEST(NameMapping, StripAndAddPrefix) {
  NameMapping strip;
  strip.strip_prefix("model.");
  EXPECT_EQ(strip.map("model.norm.weight"), "norm.weight");
  EXPECT_EQ(strip.map("lm_head.weight"), "lm_head.weight");
  NameMapping add;
  add.add_prefix("model.");
  EXPECT_EQ(add.map("norm.weight"), "model.norm.weight");
  EXPECT_EQ(add.map("model.norm.weight"), "model.norm.weight");  // never doubled
}

TEST(NameMapping, RulesApplyInOrder) {
  NameMapping m;
  m.drop(R"(.*rotary_emb\.inv_freq)")
      .strip_prefix("model.")
      .rename("embed_tokens.weight", "tok.weight")
      .regex_rename(R"(layers\.(\d+)\.)", "blk.$1.")
      .add_prefix("net.");
  EXPECT_EQ(m.map("model.layers.3.self_attn.rotary_emb.inv_freq"), std::nullopt);
  EXPECT_EQ(m.map("model.embed_tokens.weight"), "net.tok.weight");
  EXPECT_EQ(m.map("model.layers.12.mlp.up_proj.weight"), "net.blk.12.mlp.up_proj.weight");
}

TEST(NameMapping, DropNeedsAFullMatch) {
  NameMapping m;
  m.drop("opt");
  EXPECT_EQ(m.map("optimizer.state"), "optimizer.state");
  EXPECT_EQ(m.map("opt"), std::nullopt);
}

TEST(NameMapping, BadRegexIsAClearError) {
  NameMapping m;
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { m.regex_rename("(unclosed", "x"); });
  EXPECT_NE(msg.find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace wl
