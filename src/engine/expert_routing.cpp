#include "engine/expert_routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace wl {

namespace {

// Each group's score: its best expert's, or its best two's sum.
std::vector<float> group_scores(const MoeConfig& moe, const std::vector<float>& choice) {
  const uint64_t size = moe.num_experts / moe.groups;
  std::vector<float> out(moe.groups);
  for (uint64_t g = 0; g < moe.groups; ++g) {
    const auto first = choice.begin() + std::ptrdiff_t(g * size);
    std::vector<float> members(first, first + std::ptrdiff_t(size));
    std::partial_sort(members.begin(), members.begin() + (moe.group_by_top_two ? 2 : 1), members.end(), std::greater<float>());
    out[g] = moe.group_by_top_two ? members[0] + members[1] : members[0];
  }
  return out;
}

// Indices of `v` from the highest value down, the lower index first among equals.
std::vector<uint64_t> ranked(const std::vector<float>& v) {
  std::vector<uint64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return v[a] > v[b]; });
  return order;
}

}  // namespace

std::vector<ChosenExpert> route_token(const MoeConfig& moe, std::span<float> logits, const float* correction) {
  const uint64_t E = moe.num_experts;
  // Softmax as exp(v - max) over their sum (the division comes with the weights).
  float sum = 0;
  if (moe.scoring == MoeConfig::Scoring::Softmax) {
    const float max = *std::max_element(logits.begin(), logits.end());
    for (float& v : logits) sum += v = std::exp(v - max);
  } else {
    for (float& v : logits) v = 1.0f / (1.0f + std::exp(-v));
  }
  std::vector<float> choice(logits.begin(), logits.end());
  if (correction)
    for (uint64_t e = 0; e < E; ++e) choice[e] += correction[e];
  if (moe.groups > 1) {  // the experts outside the best groups cannot be chosen
    const std::vector<uint64_t> best = ranked(group_scores(moe, choice));
    std::vector<bool> kept(moe.groups, false);
    for (uint64_t i = 0; i < moe.topk_groups; ++i) kept[best[i]] = true;
    // transformers: V3 masks them with -inf, V2 with a score of 0 (the weight of such a pick, too).
    const float masked = moe.group_by_top_two ? -std::numeric_limits<float>::infinity() : 0.0f;
    const uint64_t size = E / moe.groups;
    for (uint64_t e = 0; e < E; ++e)
      if (!kept[e / size]) {
        choice[e] = masked;
        if (!correction) logits[e] = masked;
      }
  }
  const std::vector<uint64_t> order = ranked(choice);
  std::vector<ChosenExpert> out;
  float chosen = 0;
  for (uint64_t i = 0; i < moe.experts_per_token; ++i) chosen += logits[order[i]];
  // Sigmoid scores renormalise as transformers' DeepSeek-V3 does (a tiny term against zero).
  const float denominator = moe.norm_topk_prob ? (moe.scoring == MoeConfig::Scoring::Sigmoid ? chosen + 1e-20f : chosen)
                                                : (moe.scoring == MoeConfig::Scoring::Softmax ? sum : 1.0f);
  for (uint64_t i = 0; i < moe.experts_per_token; ++i) {
    float weight = logits[order[i]] / denominator;
    if (moe.routed_scaling_factor != 1) weight *= float(moe.routed_scaling_factor);
    out.push_back({order[i], weight});
  }
  return out;
}

}  // namespace wl
