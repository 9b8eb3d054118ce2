// plan_cost: what a load will read and hold, known before it reads; max_host_memory kept by the load.
#include <gtest/gtest.h>

#include "loaders/rank_shards.hpp"
#include "support/faulty_source.hpp"
#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/load_plan.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TensorView iota(Shape shape) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i);
  return t;
}

// Two files: a column- and a row-split matrix in one, a replicated vector in the other.
class PlanCost : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(dir_.file("a.safetensors"), {{"q.weight", iota({64, 96})}, {"o.weight", iota({96, 64})}});
    write_safetensors(dir_.file("b.safetensors"), {{"norm.weight", iota({96})}});
  }
  std::unique_ptr<WeightSource> open(const std::string& file) { return loader_->get_weights(dir_.file(file)); }

  // Rank `rank` of `size`: each matrix split along one dim (q by rows, o by columns: strided reads).
  static Model rank_model(unsigned rank, unsigned size, const WeightSource& source, const WeightLoader& loader) {
    Model model;
    model.add_parameter("q.weight", {64 / size, 96}, DType::BF16);
    model.add_parameter("o.weight", {96, 64 / size}, DType::F32);
    RankLayout layout;
    layout.rank = rank;
    layout.size = size;
    for (auto& [name, shards] : plan_rank_shards(model, source, loader.options(), layout)) model.find(name)->shards = shards;
    return model;
  }

  test::TempDir dir_;
  std::unique_ptr<WeightLoader> loader_ = WeightLoaderRegistry::with_builtins()->create("local", {{"io", std::string("pread")}});
};

TEST_F(PlanCost, BytesPerFileAreWhatTheLoadReads) {
  for (const char* file : {"a.safetensors", "b.safetensors"}) {
    auto source = open(file);
    Model model = loader_->mirror_model(*source);
    const LoadCost cost = plan_cost(plan_load(model, *source, loader_->options()), *source, loader_->options());
    const LoadReport report = loader_->load_weights(model, *source);
    ASSERT_EQ(cost.file_bytes.size(), 1u);
    EXPECT_EQ(cost.file_bytes.begin()->second, report.bytes_read) << file;
    EXPECT_EQ(cost.bytes_read, source->total_bytes());  // the whole file's tensors, no header
    EXPECT_EQ(cost.host_parameters, source->total_bytes());
    EXPECT_GE(cost.peak_host, cost.host_parameters);
  }
}

TEST_F(PlanCost, EachRanksBytesAreWhatItsLoadReadsAndTogetherTheSplitTensors) {
  auto source = open("a.safetensors");
  uint64_t together = 0;
  for (unsigned rank = 0; rank < 2; ++rank) {
    Model model = rank_model(rank, 2, *source, *loader_);
    const LoadCost cost = plan_cost(plan_load(model, *source, loader_->options()), *source, loader_->options());
    const LoadReport report = loader_->load_weights(model, *source);
    EXPECT_EQ(cost.bytes_read, report.bytes_read) << "rank " << rank;
    EXPECT_EQ(cost.host_parameters, 32u * 96 * 2 + 96u * 32 * 4);
    EXPECT_GT(cost.io.host_bytes, 0u);  // q converts to BF16 through staging
    together += cost.bytes_read;
  }
  EXPECT_EQ(together, source->total_bytes());  // each byte read by exactly one rank
}

TEST_F(PlanCost, ABudgetBelowTheLeastIsRefusedBeforeAnyRead) {
  auto clean = open("a.safetensors");
  const TensorInfo& first = clean->tensors().front();
  // The same catalogue read through a counting source.
  auto faulty = std::make_shared<FaultySource>(clean->file(first.source), Faults{});
  auto opener = std::make_shared<MemoryOpener>();
  opener->add(faulty);
  const WeightSource source("safetensors", clean->file_of(first), Catalogue{clean->files(), clean->tensors(), {}}, opener);
  Model model = loader_->mirror_model(source);
  LoadOptions options = loader_->options();
  const LoadCost cost = plan_cost(plan_load(model, source, options), source, options);
  options.max_host_memory = cost.min_host - 1;
  const std::string message = test::expect_error(ErrorCode::OverBudget, [&] { loader_->load_weights(model, source, options); });
  EXPECT_NE(message.find(std::to_string(cost.min_host)), std::string::npos) << message;
  EXPECT_NE(message.find("parameters"), std::string::npos) << message;
  EXPECT_EQ(faulty->reads(), 0u);
  // At the least it fits: staging and threads lowered, every byte read.
  options.max_host_memory = cost.min_host;
  const LoadReport report = loader_->load_weights(model, source, options);
  EXPECT_EQ(report.bytes_read, source.total_bytes());
  EXPECT_EQ(report.concurrency, 1u);
  EXPECT_LE(report.staging_bytes + cost.host_parameters, cost.min_host);
}

TEST_F(PlanCost, MaxHostMemoryKwargTakesBytesOrAShareOfMemory) {
  auto two_gib = WeightLoaderRegistry::with_builtins()->create("local", {{"max_host_memory", std::string("2GiB")}});
  EXPECT_EQ(two_gib->options().max_host_memory, 2ull << 30);
  auto share = WeightLoaderRegistry::with_builtins()->create("local", {{"max_host_memory", 0.5}});
  EXPECT_GT(share->options().max_host_memory, 0u);
  auto bytes = WeightLoaderRegistry::with_builtins()->create("local", {{"max_host_memory", int64_t(1000)}});
  EXPECT_EQ(bytes->options().max_host_memory, 1000u);
  test::expect_error(ErrorCode::InvalidKwarg, [] { WeightLoaderRegistry::with_builtins()->create("local", {{"max_host_memory", 1.5}}); });
}

}  // namespace
}  // namespace wl
