#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace wl {

namespace {

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[size_t(best)]) best = int32_t(i);
  return best;
}

void softmax(std::vector<float>& v) {
  const float max = *std::max_element(v.begin(), v.end());
  float sum = 0;
  for (float& x : v) sum += x = std::exp(x - max);
  for (float& x : v) x /= sum;
}

}  // namespace

Sampler::Sampler(float temperature, float top_p, uint64_t seed) : temperature_(temperature), top_p_(top_p), state_(seed) {}

float Sampler::random_f32() {  // xorshift64*, as run.c
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t r = uint32_t((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return float(r >> 8) / 16777216.0f;
}

int32_t Sampler::sample(std::vector<float> logits) {
  if (logits.empty()) return 0;
  if (temperature_ == 0.0f) return argmax(logits);
  for (float& x : logits) x /= temperature_;
  softmax(logits);
  const float coin = random_f32();
  if (top_p_ <= 0 || top_p_ >= 1) {
    float cdf = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      cdf += logits[i];
      if (coin < cdf) return int32_t(i);
    }
    return int32_t(logits.size() - 1);
  }
  // Nucleus: tokens below (1 - top_p) / (n - 1) cannot be in it, which saves sorting them.
  const float cutoff = (1.0f - top_p_) / float(logits.size() - 1);
  std::vector<std::pair<float, int32_t>> candidates;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] >= cutoff) candidates.push_back({logits[i], int32_t(i)});
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) { return a.first > b.first; });
  float cumulative = 0;
  size_t last = candidates.size() - 1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    cumulative += candidates[i].first;
    if (cumulative > top_p_) {
      last = i;
      break;
    }
  }
  const float r = coin * cumulative;
  float cdf = 0;
  for (size_t i = 0; i <= last; ++i) {
    cdf += candidates[i].first;
    if (r < cdf) return candidates[i].second;
  }
  return candidates[last].second;
}

}  // namespace wl
