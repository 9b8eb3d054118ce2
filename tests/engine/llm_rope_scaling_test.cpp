// rope_scaling through LLM, on the tiny Phi-3 of ../shared/testdata/hf-tiny-arch with its config.json
// given each scaling: the context that yarn extends, and longrope's switch to its long factors, which
// recomputes the cached positions as transformers' Phi-3 generation does (its cache is dropped there).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

// The tiny Phi-3 (max_position_embeddings 16) with `changes` merged into its config.json.
std::string phi3_with(const test::TempDir& dir, const nlohmann::json& changes) {
  const fs::path src = test::testdata_dir() / "hf-tiny-arch" / "phi3";
  nlohmann::json config = nlohmann::json::parse(test::read_bytes((src / "config.json").string()));
  config.merge_patch(changes);
  test::write_bytes(dir.file("config.json"), config.dump());
  fs::create_symlink(src / "model.safetensors", dir.file("model.safetensors"));
  return dir.path().string();
}

LLMOptions options(const std::string& model) {
  LLMOptions o;
  o.model = model;
  return o;
}

GenerationOutput greedy(LLM& llm, const std::vector<int32_t>& prompt, uint64_t max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.return_logits = true;
  p.stop_at_eos = false;
  return llm.generate(prompt, p);
}

TEST(LlmRopeScaling, YarnExtendsTheContextByItsFactor) {
  WL_REQUIRE_TESTDATA();
  test::TempDir plain_dir, yarn_dir;
  const std::vector<int32_t> prompt(20, 5);  // longer than max_position_embeddings 16
  LLM plain(options(phi3_with(plain_dir, nlohmann::json::object())));
  test::expect_error(ErrorCode::InvalidArgument, [&] { greedy(plain, prompt, 1); });
  LLM yarn(options(phi3_with(yarn_dir, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 2.0}}}})));
  EXPECT_EQ(yarn.config().context_length(), 32u);
  const GenerationOutput out = greedy(yarn, prompt, 4);
  EXPECT_EQ(out.logits.size(), 23u);
}

TEST(LlmRopeScaling, LongropeRecomputesTheCacheWhenItSwitchesToItsLongFactors) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  // Pretrained context 8: a sequence of 9 or more tokens runs on the long factors, every position of it.
  LLM llm(options(phi3_with(dir, {{"original_max_position_embeddings", 8},
                                              {"rope_scaling", {{"rope_type", "longrope"},
                                                                {"short_factor", {1.0, 1.3, 2.0}},
                                                                {"long_factor", {2.0, 5.0, 11.0}}}}})));
  const std::vector<int32_t> prompt{1, 7, 3, 9, 4};
  const GenerationOutput crossing = greedy(llm, prompt, 8);  // reaches 13 tokens, switching at the 9th
  ASSERT_EQ(crossing.logits.size(), 12u);
  std::vector<int32_t> sequence = prompt;
  sequence.insert(sequence.end(), crossing.token_ids.begin(), crossing.token_ids.end());
  for (size_t n : {7u, 8u, 10u, 12u}) {
    SCOPED_TRACE(n);
    // The same n tokens as one prompt: short factors up to 8 tokens, long beyond, from the first position on.
    const GenerationOutput whole = greedy(llm, std::vector<int32_t>(sequence.begin(), sequence.begin() + n), 1);
    ASSERT_EQ(whole.logits.size(), n);
    for (size_t v = 0; v < whole.logits[n - 1].size(); ++v)
      EXPECT_NEAR(crossing.logits[n - 1][v], whole.logits[n - 1][v], 1e-5) << "logit " << v;
  }
  // The switch changes the model: position 7 of 9 tokens (long factors) is not position 7 of 8 (short).
  EXPECT_NE(greedy(llm, std::vector<int32_t>(sequence.begin(), sequence.begin() + 8), 1).logits[7],
            greedy(llm, std::vector<int32_t>(sequence.begin(), sequence.begin() + 9), 1).logits[7]);
}

TEST(LlmRopeScaling, FactorsThatDoNotFitTheHeadsAreRefused) {
  WL_REQUIRE_TESTDATA();
  test::TempDir few, huge;
  // 6 rotary dimensions (head 8, partial 0.75) turn at 3 frequencies: 2 factors cannot say how.
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] {
    LLM(options(phi3_with(few, {{"rope_scaling", {{"rope_type", "longrope"}, {"short_factor", {1.0, 1.0}},
                                                              {"long_factor", {1.0, 1.0, 1.0}}}}})));
  });
  EXPECT_NE(msg.find("rope_scaling.short_factor"), std::string::npos) << msg;
  EXPECT_NE(msg.find(few.path().string()), std::string::npos) << msg;
  const std::string big = test::expect_error(ErrorCode::ConfigInvalid, [&] {
    LLM(options(phi3_with(huge, {{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 1e12}}}})));
  });
  EXPECT_NE(big.find("rope_scaling.factor"), std::string::npos) << big;
}

}  // namespace
}  // namespace wl
