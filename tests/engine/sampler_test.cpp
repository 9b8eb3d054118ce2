// Next-token sampling as llama2.c's run.c does it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/sampler.hpp"

namespace wl {
namespace {

TEST(Sampler, TemperatureZeroIsTheFirstArgmax) {
  Sampler s(0.0f, 0.9f, 1);
  EXPECT_EQ(s.sample({0.1f, 3.0f, -1.0f, 3.0f}), 1);
}

TEST(Sampler, SeededDrawsFollowTheDistribution) {
  Sampler s(1.0f, 1.0f, 1234);
  std::map<int32_t, int> counts;
  const std::vector<float> logits = {std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  for (int i = 0; i < 10000; ++i) ++counts[s.sample(logits)];
  EXPECT_NEAR(counts[0] / 10000.0, 0.7, 0.03);
  EXPECT_NEAR(counts[1] / 10000.0, 0.2, 0.03);
  EXPECT_NEAR(counts[2] / 10000.0, 0.1, 0.03);
  Sampler a(1.0f, 1.0f, 99), b(1.0f, 1.0f, 99);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.sample(logits), b.sample(logits));
}

TEST(Sampler, TopPKeepsOnlyTheNucleus) {
  Sampler s(1.0f, 0.5f, 7);
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(s.sample(logits), 0);  // 0.6 > 0.5 already
  Sampler wider(1.0f, 0.85f, 7);
  std::map<int32_t, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[wider.sample(logits)];
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 0);
}

}  // namespace
}  // namespace wl
