// The engine against logits that Hugging Face transformers computed (in float64) for tiny random
// checkpoints of six families beyond Llama (../shared/testdata/hf-tiny-arch): every position of
// every sequence, in one process and with two tensor-parallel ranks (threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/llm.hpp"

namespace wl {
namespace {

std::string arch_dir(const std::string& family) { return (test::testdata_dir() / "hf-tiny-arch" / family).string(); }

// The largest error over all positions of all sequences, relative to each row's largest |logit|
// (rows of zeros — a padding token's — are compared absolutely).
double max_relative_error(LLM& llm, const std::string& family) {
  const nlohmann::json ref = nlohmann::json::parse(test::read_bytes(arch_dir(family) + "/reference_logits.json"));
  double worst = 0;
  for (size_t s = 0; s < ref["sequences"].size(); ++s) {
    const std::vector<int32_t> ids = ref["sequences"][s];
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 1;
    p.return_logits = true;
    p.stop_at_eos = false;
    const GenerationOutput out = llm.generate(ids, p);
    EXPECT_EQ(out.logits.size(), ids.size()) << family;
    for (size_t pos = 0; pos < std::min(out.logits.size(), ids.size()); ++pos) {
      const std::vector<double> want = ref["logits"][s][pos];
      EXPECT_EQ(out.logits[pos].size(), want.size()) << family;
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

class LlmHfArch : public ::testing::TestWithParam<const char*> {};

TEST_P(LlmHfArch, LogitsAtEveryPositionMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  for (unsigned tp : {1u, 2u}) {
    LLMOptions o;
    o.model = arch_dir(GetParam());
    o.tensor_parallel_size = tp;
    LLM llm(o);
    EXPECT_EQ(llm.config().architecture, GetParam());
    const double err = max_relative_error(llm, GetParam());
    std::printf("[ %s tp=%u ] max error %.3g of the row's scale\n", GetParam(), tp, err);
    EXPECT_LE(err, 1e-5) << GetParam() << " tp " << tp;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LlmHfArch, ::testing::Values("qwen2", "mistral", "mixtral", "gemma", "gemma2", "phi3"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace wl
