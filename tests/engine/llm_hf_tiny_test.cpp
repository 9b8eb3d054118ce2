// The engine against logits that Hugging Face transformers computed for stas/tiny-random-llama-2
// (BF16 weights, untied lm_head): every model case of corpus.json, greedy continuations included,
// for every storage dtype and tensor-parallel size.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl {
namespace {

std::string tiny() { return (test::testdata_dir() / "hf-tiny-random-llama-2").string(); }

void check_corpus(LLM& llm, const std::string& what) {
  const nlohmann::json corpus = nlohmann::json::parse(test::read_bytes(tiny() + "/corpus.json"));
  const double atol = corpus["logit_tolerance"]["absolute"], rtol = corpus["logit_tolerance"]["relative"];
  ASSERT_FALSE(corpus["model_cases"].empty());
  for (const nlohmann::json& c : corpus["model_cases"]) {
    const std::vector<int32_t> input = c["input_ids"];
    const std::vector<int32_t> continuation = c["greedy_continuation"];
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = uint32_t(continuation.size());
    p.return_logits = true;
    p.stop_at_eos = false;
    const GenerationOutput out = llm.generate(input, p);
    EXPECT_EQ(out.token_ids, continuation) << what << " input " << c["input_ids"].dump();
    EXPECT_EQ(out.token_ids.at(0), c["greedy_token"].get<int32_t>()) << what;
    const std::vector<float>& logits = out.logits.at(input.size() - 1);
    for (const auto& [index, value] : c["sampled_logits"].items()) {
      const double want = value;
      const double got = logits.at(std::stoul(index));
      EXPECT_LE(std::abs(got - want), atol + rtol * std::abs(want)) << what << " logit " << index << " of input " << c["input_ids"].dump();
    }
  }
}

TEST(LlmHfTiny, LogitsAndGreedyTokensMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o;
  o.model = tiny();
  LLM llm(o);
  EXPECT_EQ(llm.loader_name(), "hf");
  EXPECT_EQ(llm.config().origin, "config.json");
  EXPECT_FALSE(llm.config().tie_word_embeddings);
  check_corpus(llm, "f32");
}

TEST(LlmHfTiny, Bf16StorageOfBf16WeightsIsExact) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o;
  o.model = tiny();
  o.weight_loader = "hf";
  o.weight_loader_kwargs = {{"dtype", std::string("bf16")}};
  LLM llm(o);
  check_corpus(llm, "bf16");
}

TEST(LlmHfTiny, TensorParallelTwoAndFour) {
  WL_REQUIRE_TESTDATA();
  for (unsigned tp : {2u, 4u}) {
    LLMOptions o;
    o.model = tiny();
    o.tensor_parallel_size = tp;
    LLM llm(o);
    check_corpus(llm, "tp " + std::to_string(tp));
  }
}

}  // namespace
}  // namespace wl
