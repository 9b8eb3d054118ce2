// The routers of each family, on hand-made logits: which experts a token goes to, and their weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/expert_routing.hpp"

namespace wl {
namespace {

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

std::vector<uint64_t> experts_of(const std::vector<ChosenExpert>& chosen) {
  std::vector<uint64_t> out;
  for (const ChosenExpert& c : chosen) out.push_back(c.expert);
  return out;
}

TEST(ExpertRouting, SoftmaxTopKAsMixtral) {
  MoeConfig m;
  m.num_experts = 4, m.experts_per_token = 2;
  std::vector<float> logits{0.5f, 2.0f, -1.0f, 1.0f};
  const auto chosen = route_token(m, logits, nullptr);
  EXPECT_EQ(experts_of(chosen), (std::vector<uint64_t>{1, 3}));
  EXPECT_NEAR(chosen[0].weight, 1 / (1 + std::exp(-1.0)), 1e-6);  // renormalised over the two
  EXPECT_NEAR(chosen[0].weight + chosen[1].weight, 1.0, 1e-6);
  m.norm_topk_prob = false;  // Qwen2-MoE's default: the softmax's own probabilities
  std::vector<float> again{0.5f, 2.0f, -1.0f, 1.0f};
  const double sum = std::exp(0.5) + std::exp(2.0) + std::exp(-1.0) + std::exp(1.0);
  EXPECT_NEAR(route_token(m, again, nullptr)[0].weight, std::exp(2.0) / sum, 1e-6);
}

TEST(ExpertRouting, GroupLimitedGreedyAsDeepseekV2) {
  // Groups {0,1} {2,3} {4,5}: by their best expert 3.0, 2.5, 2.9 — groups 0 and 2 kept, so expert
  // 2 (2.5, the third highest overall) cannot be chosen. Weights: softmax x routed_scaling_factor.
  MoeConfig m;
  m.num_experts = 6, m.experts_per_token = 3, m.norm_topk_prob = false, m.groups = 3, m.topk_groups = 2, m.routed_scaling_factor = 2;
  const std::vector<float> given{3.0f, 1.0f, 2.5f, 0.0f, 2.9f, 0.5f};
  std::vector<float> logits = given;
  const auto chosen = route_token(m, logits, nullptr);
  EXPECT_EQ(experts_of(chosen), (std::vector<uint64_t>{0, 4, 1}));
  double sum = 0;
  for (float v : given) sum += std::exp(v);
  EXPECT_NEAR(chosen[2].weight, 2 * std::exp(1.0) / sum, 1e-6);
}

TEST(ExpertRouting, SigmoidWithACorrectionBiasAsDeepseekV3) {
  // The bias chooses (expert 2 over expert 1, and group {2,3} by its top-2 sum) but does not weigh.
  MoeConfig m;
  m.num_experts = 4, m.experts_per_token = 2, m.scoring = MoeConfig::Scoring::Sigmoid, m.score_correction_bias = true;
  m.groups = 2, m.topk_groups = 1, m.group_by_top_two = true, m.routed_scaling_factor = 2.5;
  const std::vector<float> given{1.0f, 0.8f, 0.2f, 0.1f}, bias{0.0f, 0.0f, 0.6f, 0.6f};
  std::vector<float> logits = given;
  const auto chosen = route_token(m, logits, bias.data());
  EXPECT_EQ(experts_of(chosen), (std::vector<uint64_t>{2, 3}));
  const float a = sigmoid(0.2f), b = sigmoid(0.1f);
  EXPECT_NEAR(chosen[0].weight, 2.5f * a / (a + b), 1e-6);
  m.norm_topk_prob = false;
  logits = given;
  EXPECT_NEAR(route_token(m, logits, bias.data())[1].weight, 2.5f * b, 1e-6);
  // Without the bias, group {0,1} wins.
  logits = given;
  EXPECT_EQ(experts_of(route_token(m, logits, nullptr)), (std::vector<uint64_t>{0, 1}));
}

}  // namespace
}  // namespace wl
