// The engine against logits that Hugging Face transformers computed (in float64) for tiny random
// checkpoints of six families beyond Llama (../shared/testdata/hf-tiny-arch): every position of
// every sequence, in one process and with two tensor-parallel ranks (threads).
#include <gtest/gtest.h>

#include <cstdio>

#include "engine/reference_logits.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl {
namespace {

std::string arch_dir(const std::string& family) { return (test::testdata_dir() / "hf-tiny-arch" / family).string(); }

double max_relative_error(LLM& llm, const std::string& family) {
  return test::max_relative_error(llm, arch_dir(family) + "/reference_logits.json", family);
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

// BF16 storage rounds the F32 weights (about 3 significant digits): the logits stay near the reference.
TEST_P(LlmHfArch, Bf16StorageStaysNearTheReference) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o;
  o.model = arch_dir(GetParam());
  o.dtype = DType::BF16;
  LLM llm(o);
  EXPECT_LE(max_relative_error(llm, GetParam()), 5e-2) << GetParam();
}

// Sampling draws the same tokens whether one rank or two computed the logits.
TEST_P(LlmHfArch, SampledTokensAgreeAcrossTensorParallelSizes) {
  WL_REQUIRE_TESTDATA();
  std::vector<std::vector<int32_t>> drawn;
  for (unsigned tp : {1u, 2u}) {
    LLMOptions o;
    o.model = arch_dir(GetParam());
    o.tensor_parallel_size = tp;
    LLM llm(o);
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 7;
    p.max_tokens = 12;
    p.stop_at_eos = false;
    drawn.push_back(llm.generate(std::vector<int32_t>{1, 3}, p).token_ids);
  }
  EXPECT_EQ(drawn[0].size(), 12u);
  EXPECT_EQ(drawn[0], drawn[1]) << GetParam();
}

// Each rank reads only its slice, fused tensors included (Phi-3's qkv_proj and gate_up_proj are
// read per part, in place): the ranks' bytes together are the checkpoint's, plus the replicated norms.
TEST(LlmHfArchTp, RanksReadTheirShareOfFusedTensors) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o;
  o.model = arch_dir("phi3");
  o.tensor_parallel_size = 2;
  LLM llm(o);
  uint64_t total = 0;
  for (const LoadReport& r : llm.load_reports()) total += r.bytes_read;
  EXPECT_LE(double(total), 1.05 * 45312) << "phi3's model.safetensors holds 45312 bytes of tensors";
  EXPECT_GE(total, 45312u);
}

TEST(LlmHfArchStops, StopTokensComeFromTheConfiguration) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o;
  o.model = arch_dir("phi3");
  EXPECT_EQ(LLM(o).stop_token_ids(), std::vector<int32_t>{2});  // config.json's eos_token_id
  o.model = arch_dir("mistral");
  EXPECT_TRUE(LLM(o).stop_token_ids().empty());  // none named, no tokenizer: never 1 and 2
  // generation_config.json overrides config.json, as in transformers.
  test::TempDir dir;
  for (const char* f : {"config.json", "model.safetensors"})
    test::write_bytes(dir.file(f), test::read_bytes(arch_dir("phi3") + "/" + f));
  test::write_bytes(dir.file("generation_config.json"), R"({"eos_token_id": [2, 11]})");
  o.model = dir.path().string();
  LLM llm(o);
  EXPECT_EQ(llm.stop_token_ids(), (std::vector<int32_t>{2, 11}));
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  const GenerationOutput out = llm.generate(std::vector<int32_t>{1, 5}, p);
  for (int32_t t : out.token_ids) EXPECT_TRUE(t != 2 && t != 11) << t;
}

INSTANTIATE_TEST_SUITE_P(Families, LlmHfArch, ::testing::Values("qwen2", "mistral", "mixtral", "gemma", "gemma2", "phi3"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace wl
