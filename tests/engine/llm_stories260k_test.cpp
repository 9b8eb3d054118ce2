// The engine against llama2.c's reference run.c on its stories260K model: the exact greedy text,
// the logits of the first positions, and the same output through every format, dtype and
// tensor-parallel size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "test_util.hpp"
#include "cli/cli_run.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl {
namespace {

std::string stories(const char* file) { return (test::testdata_dir() / "llama2c-stories260K" / file).string(); }

std::string expected_text() {
  std::string text = test::read_bytes(stories("expected_greedy_t0_n200.txt"));
  if (!text.empty() && text.back() == '\n') text.pop_back();  // run.c's final newline
  return text;
}

SamplingParams greedy(uint32_t n) {
  SamplingParams p;
  p.max_tokens = n;
  p.temperature = 0;
  return p;
}

LLM open(const std::string& model, Kwargs kw = {}, unsigned tp = 1, DType dtype = DType::F32) {
  LLMOptions o;
  o.model = model;
  o.weight_loader_kwargs = std::move(kw);
  o.tensor_parallel_size = tp;
  o.dtype = dtype;
  o.tokenizer = stories("tok512.bin");
  return LLM(o);
}

// run.c's `-n 200` samples a token at each of its 200 positions (BOS is fed at position 0, and the
// token sampled there is printed too), so its text is 200 generated tokens: max_tokens = 200.
TEST(LlmStories260K, GreedyTextIsExactlyRunC) {
  WL_REQUIRE_TESTDATA();
  LLM llm = open(stories("stories260K.bin"));
  EXPECT_EQ(llm.loader_name(), "local");
  const GenerationOutput out = llm.generate(std::string(), greedy(200));
  EXPECT_EQ(out.text, expected_text());
  EXPECT_EQ(out.token_ids.size(), 200u);
  // One token fewer is the same text without its last piece, " she".
  EXPECT_EQ(llm.generate(std::string(), greedy(199)).text + " she", expected_text());
}

TEST(LlmStories260K, FirstLogitsMatchRunCWithin1e4) {
  WL_REQUIRE_TESTDATA();
  std::ifstream in(stories("expected_logits_first4.txt"));
  std::vector<int32_t> fed;
  std::vector<std::vector<float>> want;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("pos ", 0) == 0) {
      fed.push_back(std::stoi(line.substr(line.find("token ") + 6)));
      want.emplace_back();
    } else if (!line.empty()) {
      want.back().push_back(std::stof(line));
    }
  }
  ASSERT_EQ(want.size(), 4u);
  LLM llm = open(stories("stories260K.bin"));
  SamplingParams p = greedy(4);
  p.return_logits = true;
  const GenerationOutput out = llm.generate(std::vector<int32_t>{1}, p);
  ASSERT_EQ(out.logits.size(), 4u);
  for (size_t pos = 0; pos < 4; ++pos) {
    if (pos > 0) {
      EXPECT_EQ(out.token_ids[pos - 1], fed[pos]) << "token fed at position " << pos;
    }
    ASSERT_EQ(out.logits[pos].size(), want[pos].size());
    for (size_t i = 0; i < want[pos].size(); ++i) ASSERT_NEAR(out.logits[pos][i], want[pos][i], 1e-4) << "pos " << pos << " logit " << i;
  }
}

TEST(LlmStories260K, TensorParallelRanksReadOnlyTheirSlicesAndAgree) {
  WL_REQUIRE_TESTDATA();
  LLM one = open(stories("stories260K.bin"));
  SamplingParams p = greedy(199);
  p.return_logits = true;
  const GenerationOutput base = one.generate(std::vector<int32_t>{1}, p);
  const uint64_t model_bytes = one.load_reports()[0].bytes_read;
  for (unsigned tp : {2u, 4u}) {
    LLM llm = open(stories("stories260K.bin"), {}, tp);
    const GenerationOutput out = llm.generate(std::vector<int32_t>{1}, p);
    EXPECT_EQ(out.token_ids, base.token_ids) << "tp " << tp;
    for (size_t pos = 0; pos < 4; ++pos)
      for (size_t i = 0; i < 512; ++i) ASSERT_NEAR(out.logits[pos][i], base.logits[pos][i], 1e-4) << "tp " << tp;
    ASSERT_EQ(llm.load_reports().size(), tp);
    uint64_t sum = 0;
    for (const LoadReport& r : llm.load_reports()) {
      EXPECT_LT(r.bytes_read, model_bytes / tp + model_bytes / 50) << "tp " << tp;
      sum += r.bytes_read;
    }
    EXPECT_LE(double(sum), 1.05 * double(model_bytes)) << "tp " << tp;
    EXPECT_EQ(llm.parameter_bytes(), one.parameter_bytes() + (tp - 1) * 11 * 64 * 4) << "only the norms are replicated";
  }
}

TEST(LlmStories260K, EveryFormatGivesTheSameText) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = WeightLoaderRegistry::with_builtins()->create("llama2c")->get_weights(stories("stories260K.bin"));
  const std::string want = expected_text();
  struct Case {
    CheckpointFormat format;
    std::string out;
    std::string loader;
  };
  for (const Case& c : {Case{CheckpointFormat::Safetensors, dir.file("hf"), "hf"}, Case{CheckpointFormat::Gguf, dir.file("m.gguf"), "gguf"},
                        Case{CheckpointFormat::CustomBinary, dir.file("custom"), "custom_binary"}}) {
    ConvertOptions o;
    o.to = c.format;
    const bool gguf = c.format == CheckpointFormat::Gguf;
    if (gguf) o.tokenizer = stories("tok512.bin");  // embedded: the engine finds it there
    convert_checkpoint(*source, c.out, o);
    LLMOptions lo;
    lo.model = c.out;
    lo.weight_loader = c.loader;
    if (!gguf) lo.tokenizer = stories("tok512.bin");
    LLM llm(lo);
    ASSERT_NE(llm.tokenizer(), nullptr);
    EXPECT_EQ(llm.tokenizer()->kind(), gguf ? "gguf" : "llama2c");
    EXPECT_EQ(llm.generate(std::string(), greedy(200)).text, want) << c.loader;
  }
}

TEST(LlmStories260K, Bf16WeightsHalveTheMemoryAndStayClose) {
  WL_REQUIRE_TESTDATA();
  LLM f32 = open(stories("stories260K.bin"));
  LLM bf16 = open(stories("stories260K.bin"), {}, 1, DType::BF16);
  EXPECT_LT(bf16.parameter_bytes(), f32.parameter_bytes() * 6 / 10);
  SamplingParams p = greedy(1);
  p.return_logits = true;
  const auto a = f32.generate(std::vector<int32_t>{1}, p).logits[0];
  const auto b = bf16.generate(std::vector<int32_t>{1}, p).logits[0];
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 0.05) << i;
}

TEST(LlmStories260K, SeededSamplingIsReproducible) {
  WL_REQUIRE_TESTDATA();
  LLM llm = open(stories("stories260K.bin"));
  SamplingParams p;
  p.max_tokens = 40;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  p.seed = 42;
  const GenerationOutput a = llm.generate(std::string("Once upon"), p);
  const GenerationOutput b = llm.generate(std::string("Once upon"), p);
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_EQ(a.text.rfind("Once upon", 0), 0u) << a.text;
  p.seed = 43;
  EXPECT_NE(llm.generate(std::string("Once upon"), p).token_ids, a.token_ids);
}

TEST(LlmStories260K, CliPrintsRunCsText) {
  WL_REQUIRE_TESTDATA();
  const test::CliRun r = test::cli_stdout(fmt::format("generate --model {} --tokenizer {} -t 0 -n 200", stories("stories260K.bin"),
                                                      stories("tok512.bin")));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, test::read_bytes(stories("expected_greedy_t0_n200.txt")));
  const test::CliRun tp = test::cli_stdout(fmt::format("generate --model {} --tokenizer {} -t 0 -n 200 --tp 2 --loader llama2c",
                                                       stories("stories260K.bin"), stories("tok512.bin")));
  EXPECT_EQ(tp.out, r.out);
}

TEST(LlmStories260K, ATextPromptWithoutTokenizerIsAClearError) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  std::filesystem::copy_file(stories("stories260K.bin"), dir.file("model.bin"));
  LLMOptions o;
  o.model = dir.file("model.bin");
  LLM llm(o);
  EXPECT_EQ(llm.tokenizer(), nullptr);
  test::expect_error(ErrorCode::TokenizerNotFound, [&] { llm.generate(std::string("hi"), greedy(2)); });
  EXPECT_EQ(llm.generate(std::vector<int32_t>{1}, greedy(3)).token_ids.size(), 3u);
}

}  // namespace
}  // namespace wl
