// The families beyond Llama over MPI ranks: logits at every position of every sequence equal
// those transformers computed (../shared/testdata/hf-tiny-arch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "mpi_world.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl {
namespace {

// Each family, and Mixtral also with its experts whole on each rank (expert parallel).
class MpiLlmFamilies : public ::testing::TestWithParam<std::pair<const char*, bool>> {};

TEST_P(MpiLlmFamilies, LogitsMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  const auto [family, expert_parallel] = GetParam();
  const std::string dir = (test::testdata_dir() / "hf-tiny-arch" / family).string();
  const nlohmann::json config = nlohmann::json::parse(test::read_bytes(dir + "/config.json"));
  if (config["num_attention_heads"].get<unsigned>() % test::mpi_world()->size() != 0)
    GTEST_SKIP() << family << "'s heads do not split over " << test::mpi_world()->size() << " ranks";
  LLMOptions o;
  o.model = dir;
  o.communicator = test::mpi_world();
  o.threads = 1;
  o.expert_parallel = expert_parallel;
  LLM llm(o);
  const nlohmann::json ref = nlohmann::json::parse(test::read_bytes(dir + "/reference_logits.json"));
  for (size_t s = 0; s < ref["sequences"].size(); ++s) {
    SamplingParams p;
    p.max_tokens = 1;
    p.temperature = 0;
    p.return_logits = true;
    p.stop_at_eos = false;
    const GenerationOutput out = llm.generate(ref["sequences"][s].get<std::vector<int32_t>>(), p);
    ASSERT_EQ(out.logits.size(), ref["logits"][s].size());
    for (size_t pos = 0; pos < out.logits.size(); ++pos) {
      const std::vector<double> want = ref["logits"][s][pos];
      double scale = 1, err = 0;
      for (size_t v = 0; v < want.size(); ++v) {
        scale = std::max(scale, std::abs(want[v]));
        err = std::max(err, std::abs(double(out.logits[pos].at(v)) - want[v]));
      }
      EXPECT_LE(err / scale, 1e-5) << family << " sequence " << s << " position " << pos;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MpiLlmFamilies,
                         ::testing::Values(std::pair{"qwen2", false}, std::pair{"mistral", false}, std::pair{"mixtral", false},
                                           std::pair{"mixtral", true}, std::pair{"gemma", false}, std::pair{"gemma2", false},
                                           std::pair{"phi3", false}),
                         [](const auto& info) {
                           return std::string(info.param.first) + (info.param.second ? "_expert_parallel" : "");
                         });

}  // namespace
}  // namespace wl
