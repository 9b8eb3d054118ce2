// Picks the next token the way llama2.c's run.c does, so a seeded run reproduces its output:
// temperature 0 is argmax; otherwise softmax(logits / temperature), then top-p (nucleus) sampling
// when 0 < top_p < 1, else sampling from the whole distribution, with run.c's xorshift generator.
#pragma once

#include <cstdint>
#include <vector>

namespace wl {

class Sampler {
 public:
  Sampler(float temperature, float top_p, uint64_t seed);
  int32_t sample(std::vector<float> logits);

 private:
  float random_f32();
  float temperature_, top_p_;
  uint64_t state_;
};

}  // namespace wl
