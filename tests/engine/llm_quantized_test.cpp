// The engine on quantised GGUF weights: tensor-parallel ranks split the MLP in whole Q8_0 blocks so
// that each rank can read its columns of down_proj, and every rank count gives the same tokens.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

TEST(LlmQuantized, Q8_0GgufUnderTensorParallelism) {
  test::TempDir dir;
  SynthOptions synth;
  synth.shape = {256, 64, 96, 2, 4, 2, false};  // MLP of 3 Q8_0 blocks: ranks get 1 and 2 blocks
  write_synthetic_llama(dir.file("hf"), synth);
  ConvertOptions to_gguf;
  to_gguf.to = CheckpointFormat::Gguf;
  to_gguf.gguf_type = "q8_0";
  convert_checkpoint(*WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir.file("hf")), dir.file("m.gguf"), to_gguf);

  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 12;
  greedy.return_logits = true;
  std::vector<GenerationOutput> outs;
  for (unsigned tp : {1u, 2u}) {
    LLMOptions o;
    o.model = dir.file("m.gguf");
    o.weight_loader = "gguf";
    o.tensor_parallel_size = tp;
    LLM llm(o);
    EXPECT_EQ(llm.load_reports()[0].converted.empty(), false) << "Q8_0 is dequantised on load";
    outs.push_back(llm.generate(std::vector<int32_t>{1, 17, 42}, greedy));
  }
  EXPECT_EQ(outs[1].token_ids, outs[0].token_ids);
  for (size_t i = 0; i < outs[0].logits[2].size(); ++i) ASSERT_NEAR(outs[1].logits[2][i], outs[0].logits[2][i], 1e-4);

  // The same model from the F32 original stays close: Q8_0 costs little precision.
  LLMOptions f32;
  f32.model = dir.file("hf");
  const GenerationOutput exact = LLM(f32).generate(std::vector<int32_t>{1, 17, 42}, greedy);
  for (size_t i = 0; i < exact.logits[2].size(); ++i) ASSERT_NEAR(outs[0].logits[2][i], exact.logits[2][i], 2e-2);
}

}  // namespace
}  // namespace wl
