// LLM over MPI ranks (one per process, started by mpirun): the same outputs as llama2.c's run.c and
// Hugging Face transformers, the same as the ranks of one process, each rank reading only its
// slice; and the faults: a rank that cannot open or load its checkpoint, or sees another one, makes
// every rank throw the same error naming it, before anything is computed.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mpi_world.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/engine/llm.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

std::string stories(const char* file) { return (test::testdata_dir() / "llama2c-stories260K" / file).string(); }
std::string tiny() { return (test::testdata_dir() / "hf-tiny-random-llama-2").string(); }
unsigned rank() { return test::mpi_world()->rank(); }
unsigned size() { return test::mpi_world()->size(); }
unsigned last() { return size() - 1; }

SamplingParams greedy(uint32_t n, bool logits = false) {
  SamplingParams p;
  p.max_tokens = n;
  p.temperature = 0;
  p.return_logits = logits;
  return p;
}

LLMOptions over_mpi(const std::string& model, std::shared_ptr<Communicator> comm = test::mpi_world()) {
  LLMOptions o;
  o.model = model;
  o.communicator = std::move(comm);
  o.threads = 1;
  return o;
}

std::vector<std::vector<float>> run_c_logits(std::vector<int32_t>& fed) {
  std::ifstream in(stories("expected_logits_first4.txt"));
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
  return want;
}

// Runs `f` (which must throw wl::Error) and returns the error.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error on rank " << rank();
  return Error(ErrorCode::Io, "none");
}

TEST(MpiStories260K, GreedyTextAndLogitsAreRunCsOnEveryRank) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o = over_mpi(stories("stories260K.bin"));
  o.tokenizer = stories("tok512.bin");
  LLM llm(o);
  EXPECT_EQ(llm.ranks(), size());
  EXPECT_EQ(llm.held_ranks(), std::vector<unsigned>{rank()});
  std::string want = test::read_bytes(stories("expected_greedy_t0_n200.txt"));
  want.pop_back();  // run.c's final newline
  EXPECT_EQ(llm.generate(std::string(), greedy(200)).text, want) << "rank " << rank();

  std::vector<int32_t> fed;
  const std::vector<std::vector<float>> logits = run_c_logits(fed);
  const GenerationOutput out = llm.generate(std::vector<int32_t>{1}, greedy(4, true));
  ASSERT_EQ(out.logits.size(), 4u);
  for (size_t pos = 0; pos < 4; ++pos) {
    if (pos > 0) {
      EXPECT_EQ(out.token_ids[pos - 1], fed[pos]);
    }
    for (size_t i = 0; i < logits[pos].size(); ++i) ASSERT_NEAR(out.logits[pos][i], logits[pos][i], 1e-4) << "pos " << pos << " logit " << i;
  }
}

TEST(MpiStories260K, SameAsTheRanksOfOneProcessEachReadingOnlyItsSlice) {
  WL_REQUIRE_TESTDATA();
  LLM mpi(over_mpi(stories("stories260K.bin")));
  LLMOptions local;
  local.model = stories("stories260K.bin");
  local.tensor_parallel_size = size();
  local.threads = 1;
  LLM threads(local);
  const GenerationOutput a = mpi.generate(std::vector<int32_t>{1}, greedy(100, true));
  const GenerationOutput b = threads.generate(std::vector<int32_t>{1}, greedy(100, true));
  EXPECT_EQ(a.token_ids, b.token_ids);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  for (size_t pos = 0; pos < a.logits.size(); ++pos)
    for (size_t i = 0; i < a.logits[pos].size(); ++i) ASSERT_NEAR(a.logits[pos][i], b.logits[pos][i], 1e-4) << "pos " << pos;
  EXPECT_EQ(mpi.parameter_bytes(), threads.parameter_bytes());

  // Every rank has every rank's report, and they read what the ranks of one process read.
  const uint64_t file_bytes = fs::file_size(stories("stories260K.bin"));
  ASSERT_EQ(mpi.load_reports().size(), size());
  uint64_t sum = 0;
  for (unsigned r = 0; r < size(); ++r) {
    EXPECT_EQ(mpi.load_reports()[r].bytes_read, threads.load_reports()[r].bytes_read) << "rank " << r;
    EXPECT_EQ(mpi.load_reports()[r].loaded, threads.load_reports()[r].loaded) << "rank " << r;
    EXPECT_LT(mpi.load_reports()[r].bytes_read, file_bytes / size() + file_bytes / 50) << "rank " << r;
    sum += mpi.load_reports()[r].bytes_read;
  }
  EXPECT_LE(double(sum), 1.05 * double(file_bytes));
}

// A program with its own MPI communicator hands it over (the LLM works on a duplicate).
TEST(MpiStories260K, AProgramsOwnCommunicator) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o = over_mpi(stories("stories260K.bin"), std::make_shared<MpiCommunicator>(MPI_COMM_WORLD));
  o.tokenizer = stories("tok512.bin");
  LLM llm(o);
  EXPECT_EQ(llm.ranks(), size());
  std::string want = test::read_bytes(stories("expected_greedy_t0_n200.txt"));
  EXPECT_EQ(llm.generate(std::string(), greedy(200)).text + "\n", want);
}

TEST(MpiHfTiny, LogitsAndGreedyTokensMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  LLM llm(over_mpi(tiny()));
  const nlohmann::json corpus = nlohmann::json::parse(test::read_bytes(tiny() + "/corpus.json"));
  const double atol = corpus["logit_tolerance"]["absolute"], rtol = corpus["logit_tolerance"]["relative"];
  ASSERT_FALSE(corpus["model_cases"].empty());
  for (const nlohmann::json& c : corpus["model_cases"]) {
    const std::vector<int32_t> input = c["input_ids"];
    const std::vector<int32_t> continuation = c["greedy_continuation"];
    SamplingParams p = greedy(uint32_t(continuation.size()), true);
    p.stop_at_eos = false;
    const GenerationOutput out = llm.generate(input, p);
    EXPECT_EQ(out.token_ids, continuation) << "input " << c["input_ids"].dump();
    const std::vector<float>& logits = out.logits.at(input.size() - 1);
    for (const auto& [index, value] : c["sampled_logits"].items()) {
      const double want = value;
      EXPECT_LE(std::abs(logits.at(std::stoul(index)) - want), atol + rtol * std::abs(want)) << "logit " << index;
    }
  }
}

TEST(MpiFaults, IdenticalCopiesAtDifferentPathsAgree) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;  // each rank its own
  fs::copy_file(stories("stories260K.bin"), dir.file("stories260K.bin"));
  LLMOptions o = over_mpi(rank() == last() ? dir.file("stories260K.bin") : stories("stories260K.bin"));
  o.tokenizer = stories("tok512.bin");
  LLM llm(o);
  EXPECT_EQ(llm.generate(std::string(), greedy(20)).token_ids.size(), 20u);
}

TEST(MpiFaults, AMissingFileOnOneRankStopsEveryRankNamingIt) {
  WL_REQUIRE_TESTDATA();
  const std::string missing = "/nonexistent/rank" + std::to_string(last()) + "/stories260K.bin";
  const Error e = error_of([&] { LLM llm(over_mpi(rank() == last() ? missing : stories("stories260K.bin"))); });
  EXPECT_EQ(e.code(), ErrorCode::FileNotFound) << e.what();  // the failed rank's code, on every rank
  const std::string what = e.what();
  EXPECT_NE(what.find("rank " + std::to_string(last()) + " of " + std::to_string(size()) + " failed opening the checkpoint"),
            std::string::npos) << what;
  EXPECT_NE(what.find(missing), std::string::npos) << what;
}

TEST(MpiFaults, ACorruptCopyOnOneRankStopsEveryRank) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  const std::string bin = test::read_bytes(stories("stories260K.bin"));
  std::ofstream(dir.file("model.bin"), std::ios::binary).write(bin.data(), std::streamsize(bin.size() - 4096));
  const std::string corrupt = dir.file("model.bin");  // the last rank's only: the others see no such file
  const Error e = error_of([&] { LLM llm(over_mpi(rank() == last() ? corrupt : stories("stories260K.bin"))); });
  EXPECT_EQ(e.code(), ErrorCode::UnknownFormat) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find("rank " + std::to_string(last()) + " of " + std::to_string(size()) + " failed opening the checkpoint: "), std::string::npos) << what;
  EXPECT_NE(what.find("model.bin: not a checkpoint"), std::string::npos) << what;
}

TEST(MpiFaults, ALoadThatFailsOnOneRankStopsEveryRankBeforeComputing) {
  WL_REQUIRE_TESTDATA();
  LLMOptions o = over_mpi(tiny());
  // The last rank's loader drops lm_head: its strict load leaves the parameter empty.
  if (rank() == last()) o.weight_loader_kwargs = {{"drop", std::string(R"(lm_head\..*)")}};
  const Error e = error_of([&] { LLM llm(o); });
  EXPECT_EQ(e.code(), ErrorCode::MissingParameters) << e.what();
  EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last()) + " of " + std::to_string(size()) + " failed loading"),
            std::string::npos) << e.what();
}

TEST(MpiFaults, RanksThatSeeDifferentCheckpointsDisagreeBeforeReading) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  fs::copy(tiny(), dir.path());
  std::string config = test::read_bytes(tiny() + "/config.json");
  const size_t at = config.find("\"rms_norm_eps\": 1e-05");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 21, "\"rms_norm_eps\": 1e-06");  // only the configuration differs
  std::ofstream(dir.file("config.json"), std::ios::trunc) << config;
  const Error e = error_of([&] { LLM llm(over_mpi(rank() == last() ? dir.path().string() : tiny())); });
  EXPECT_EQ(e.code(), ErrorCode::RanksDisagree) << e.what();
  EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last()) + " of"), std::string::npos) << e.what();
}

// A communicator whose last rank dies (SIGKILL) in the middle of the forward pass, while the others
// wait for it in an all-reduce.
class DyingCommunicator final : public Communicator {
 public:
  explicit DyingCommunicator(std::shared_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  unsigned rank() const override { return inner_->rank(); }
  unsigned size() const override { return inner_->size(); }
  void all_reduce_sum(float* data, size_t n) override {
    if (generating_ && inner_->rank() == inner_->size() - 1 && ++reduces_ == 7) std::raise(SIGKILL);
    inner_->all_reduce_sum(data, n);
  }
  void all_gather(const void* in, size_t bytes, void* out) override { inner_->all_gather(in, bytes, out); }
  void broadcast(void* data, size_t bytes, unsigned root) override { inner_->broadcast(data, bytes, root); }
  void barrier() override { inner_->barrier(); }
  void abort(const std::string& why) override { inner_->abort(why); }
  bool generating_ = false;

 private:
  std::shared_ptr<Communicator> inner_;
  unsigned reduces_ = 0;
};

// Run on its own (tests/CMakeLists.txt): mpirun must end the job, not wait for the dead rank.
TEST(MpiFaults, DISABLED_AKilledRankEndsTheJob) {
  WL_REQUIRE_TESTDATA();
  auto dying = std::make_shared<DyingCommunicator>(test::mpi_world());
  LLM llm(over_mpi(stories("stories260K.bin"), dying));
  dying->generating_ = true;
  llm.generate(std::vector<int32_t>{1}, greedy(100));
  ADD_FAILURE() << "rank " << rank() << " generated although rank " << last() << " was killed";
}

}  // namespace
}  // namespace wl
