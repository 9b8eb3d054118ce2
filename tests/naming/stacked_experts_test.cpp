// transformers 5's stacked experts: the per-expert names each family's earlier checkpoints use.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "weightloader/name_schemes.hpp"

namespace wl {
namespace {

TEST(StackedExperts, EachFamilyNamesItsExpertsAndRouter) {
  const auto mixtral = unstacked_experts("mixtral", "model.layers.3.mlp.experts.gate_up_proj", 5);
  ASSERT_EQ(mixtral.size(), 2u);
  EXPECT_EQ(mixtral[0].name, "model.layers.3.block_sparse_moe.experts.5.w1.weight");  // gate rows first
  EXPECT_EQ(mixtral[1].name, "model.layers.3.block_sparse_moe.experts.5.w3.weight");
  EXPECT_EQ(mixtral[1].part, 1u);
  EXPECT_EQ(mixtral[1].parts, 2u);
  const auto down = unstacked_experts("qwen2_moe", "model.layers.0.mlp.experts.down_proj", 2);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].name, "model.layers.0.mlp.experts.2.down_proj.weight");
  EXPECT_EQ(unstacked_router("mixtral", "model.layers.1.mlp.gate.weight"), "model.layers.1.block_sparse_moe.gate.weight");
  EXPECT_EQ(unstacked_router("qwen2_moe", "model.layers.1.mlp.gate.weight"), std::nullopt);  // the same name in both
  // Not a stack, or a family without experts: nothing to present.
  EXPECT_TRUE(unstacked_experts("mixtral", "model.layers.3.block_sparse_moe.experts.0.w1.weight", 0).empty());
  EXPECT_TRUE(unstacked_experts("llama", "model.layers.3.mlp.experts.gate_up_proj", 0).empty());
  EXPECT_EQ(unstacked_router("llama", "model.layers.1.mlp.gate.weight"), std::nullopt);
  // The families whose stacks the engine reads in place keep them.
  EXPECT_TRUE(unstacked_experts("gpt_oss", "model.layers.0.mlp.experts.gate_up_proj", 0).empty());
  EXPECT_TRUE(unstacked_experts("llama4_text", "model.layers.1.feed_forward.experts.gate_up_proj", 0).empty());
  EXPECT_TRUE(unstacked_experts("llama4_text", "model.layers.1.feed_forward.experts.down_proj", 0).empty());
}

TEST(StackedExperts, GraniteMoeCheckpointsReadAsMixtrals) {
  for (const char* stack : {"block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj"}) {
    const auto parts = unstacked_experts("granitemoe", fmt::format("model.layers.2.{}", stack), 3);
    ASSERT_EQ(parts.size(), 2u) << stack;
    EXPECT_EQ(parts[0].name, "model.layers.2.block_sparse_moe.experts.3.w1.weight");  // gate rows, then up
    EXPECT_EQ(parts[1].name, "model.layers.2.block_sparse_moe.experts.3.w3.weight");
  }
  const auto down = unstacked_experts("granitemoeshared", "model.layers.0.block_sparse_moe.output_linear.weight", 1);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].name, "model.layers.0.block_sparse_moe.experts.1.w2.weight");
  for (const char* router : {"block_sparse_moe.router.layer.weight", "block_sparse_moe.router.weight"})
    EXPECT_EQ(unstacked_router("granitemoe", fmt::format("model.layers.1.{}", router)), "model.layers.1.block_sparse_moe.gate.weight");
  // The shared MLP is no stack; Mixtral's checkpoints have no input_linear.
  EXPECT_TRUE(unstacked_experts("granitemoeshared", "model.layers.0.shared_mlp.input_linear.weight", 0).empty());
  EXPECT_TRUE(unstacked_experts("mixtral", "model.layers.0.block_sparse_moe.input_linear.weight", 0).empty());
}

}  // namespace
}  // namespace wl
