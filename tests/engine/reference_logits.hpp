// Comparing the engine with logits that Hugging Face transformers computed: a reference_logits.json
// of ../shared/testdata/hf-tiny-arch ({"sequences": [[ids]], "logits": [seq][pos][vocab]}).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl::test {

// The largest error over all positions of all sequences, relative to each row's largest |logit|
// (rows of zeros — a padding token's — are compared absolutely).
inline double max_relative_error(LLM& llm, const std::string& reference_json, const std::string& what) {
  const nlohmann::json ref = nlohmann::json::parse(read_bytes(reference_json));
  double worst = 0;
  for (size_t s = 0; s < ref["sequences"].size(); ++s) {
    const std::vector<int32_t> ids = ref["sequences"][s];
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 1;
    p.return_logits = true;
    p.stop_at_eos = false;
    const GenerationOutput out = llm.generate(ids, p);
    EXPECT_EQ(out.logits.size(), ids.size()) << what;
    for (size_t pos = 0; pos < std::min(out.logits.size(), ids.size()); ++pos) {
      const std::vector<double> want = ref["logits"][s][pos];
      EXPECT_EQ(out.logits[pos].size(), want.size()) << what;
      double scale = 0, err = 0;
      for (size_t v = 0; v < want.size() && v < out.logits[pos].size(); ++v) {
        scale = std::max(scale, std::abs(want[v]));
        err = std::max(err, std::abs(double(out.logits[pos][v]) - want[v]));
      }
      worst = std::max(worst, err / std::max(scale, 1.0));
    }
  }
  return worst;
}

}  // namespace wl::test
