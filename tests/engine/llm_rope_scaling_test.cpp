// rope_scaling through LLM, on the tiny Phi-3 (Qwen2 for yarn) of ../shared/testdata/hf-tiny-arch with its
// config.json given each scaling: the context that yarn extends, and longrope's switch to its long factors, which
// recomputes the cached positions as transformers' Phi-3 generation does (its cache is dropped there).
// And the same settings as transformers 5 writes them (rope_parameters), per layer type on Gemma 2.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/reference_logits.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

// A tiny model of `family` with `changes` merged into its config.json (a null removes a field).
std::string family_with(const std::string& family, const test::TempDir& dir, const nlohmann::json& changes) {
  const fs::path src = test::testdata_dir() / "hf-tiny-arch" / family;
  nlohmann::json config = nlohmann::json::parse(test::read_bytes((src / "config.json").string()));
  config.merge_patch(changes);
  test::write_bytes(dir.file("config.json"), config.dump());
  fs::create_symlink(src / "model.safetensors", dir.file("model.safetensors"));
  return dir.path().string();
}

// The tiny Phi-3 (max_position_embeddings 16) with `changes` merged into its config.json.
std::string phi3_with(const test::TempDir& dir, const nlohmann::json& changes) { return family_with("phi3", dir, changes); }

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
  test::TempDir plain_dir, yarn_dir, phi3_dir;
  const std::vector<int32_t> prompt(20, 5);  // longer than max_position_embeddings 16
  LLM plain(options(family_with("qwen2", plain_dir, nlohmann::json::object())));
  test::expect_error(ErrorCode::InvalidArgument, [&] { greedy(plain, prompt, 1); });
  LLM yarn(options(family_with("qwen2", yarn_dir, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 2.0}}}})));
  EXPECT_EQ(yarn.config().context_length(), 32u);
  const GenerationOutput out = greedy(yarn, prompt, 4);
  EXPECT_EQ(out.logits.size(), 23u);
  // Phi-3's legacy yarn is its longrope (transformers reads it so), which needs its factors.
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] {
    LLM phi3(options(phi3_with(phi3_dir, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 2.0}}}})));
  });
  EXPECT_NE(msg.find("'rope_scaling.short_factor'"), std::string::npos) << msg;
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

// transformers 5's config.json for the same checkpoints: the logits transformers computed from the
// transformers 4 form. Per layer type, each layer takes its own type's: Mistral's all slide, and
// this Qwen2's none (a wrong theta on the type without layers changes nothing).
TEST(LlmRopeScaling, RopeParametersRunAsTheLegacyFields) {
  WL_REQUIRE_TESTDATA();
  auto per_type = [](double full, double sliding) {
    return nlohmann::json{{"rope_theta", nullptr},
                          {"rope_parameters", {{"full_attention", {{"rope_theta", full}, {"rope_type", "default"}}},
                                               {"sliding_attention", {{"rope_theta", sliding}, {"rope_type", "default"}}}}}};
  };
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"mistral", per_type(3.0, 10000.0)},
      {"qwen2", per_type(10000.0, 3.0)},
      {"qwen2", {{"rope_theta", nullptr}, {"rope_parameters", {{"rope_theta", 10000.0}, {"rope_type", "default"}}}}},
      {"phi3", {{"rope_theta", nullptr}, {"partial_rotary_factor", nullptr},
                {"rope_parameters", {{"rope_theta", 10000.0}, {"rope_type", "default"}, {"partial_rotary_factor", 0.75}}}}},
      {"gemma2", per_type(10000.0, 10000.0)},
  };
  for (const auto& [family, changes] : cases) {
    SCOPED_TRACE(family);
    for (unsigned tp : {1u, 2u}) {
      test::TempDir dir;
      LLMOptions o = options(family_with(family, dir, changes));
      o.tensor_parallel_size = tp;
      LLM llm(o);
      const std::string reference = (test::testdata_dir() / "hf-tiny-arch" / family / "reference_logits.json").string();
      EXPECT_LE(test::max_relative_error(llm, reference, family), 1e-5) << "tp " << tp;
    }
  }
}

// Gemma 2's layer 0 slides and layer 1 does not: a theta for either type changes the model, each
// its own way, and the ranks agree on which layer turns with which.
TEST(LlmRopeScaling, GemmaSlidingAndFullLayersTurnWithTheirOwnTheta) {
  WL_REQUIRE_TESTDATA();
  auto per_type = [](double full, double sliding) {
    return nlohmann::json{{"rope_theta", nullptr},
                          {"rope_parameters", {{"full_attention", {{"rope_theta", full}, {"rope_type", "default"}}},
                                               {"sliding_attention", {{"rope_theta", sliding}, {"rope_type", "default"}}}}}};
  };
  const std::vector<int32_t> prompt{1, 7, 3, 9, 4, 2, 8, 5};
  auto logits = [&](const nlohmann::json& changes, unsigned tp) {
    test::TempDir dir;
    LLMOptions o = options(family_with("gemma2", dir, changes));
    o.tensor_parallel_size = tp;
    LLM llm(o);
    return greedy(llm, prompt, 1).logits.back();
  };
  const std::vector<float> plain = logits(per_type(10000.0, 10000.0), 1);
  const std::vector<float> local = logits(per_type(10000.0, 3.0), 1), global = logits(per_type(3.0, 10000.0), 1);
  EXPECT_NE(local, plain);
  EXPECT_NE(global, plain);
  EXPECT_NE(local, global);
  EXPECT_NE(logits(per_type(3.0, 3.0), 1), local);
  const std::vector<float> local_tp2 = logits(per_type(10000.0, 3.0), 2);
  ASSERT_EQ(local_tp2.size(), local.size());
  for (size_t v = 0; v < local.size(); ++v) EXPECT_NEAR(local_tp2[v], local[v], 1e-4) << "logit " << v;
}

}  // namespace
}  // namespace wl
