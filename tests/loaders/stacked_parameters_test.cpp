// Parameters filled from slices of several checkpoint tensors (ParameterShard): vLLM's stacked
// qkv/gate_up parameters and tensor-parallel shards through the default load_weights.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TensorView counting(Shape shape, float start) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + float(i);
  return t;
}

class StackedParameters : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(dir.file("model.safetensors"),
                      {{"q.weight", counting({4, 3}, 0)}, {"k.weight", counting({2, 3}, 100)}, {"o.weight", counting({3, 4}, 200)}});
    loader = WeightLoaderRegistry::with_builtins()->create("local");
    source = loader->get_weights(dir.file("model.safetensors"));
  }
  test::TempDir dir;
  std::unique_ptr<WeightLoader> loader;
  std::unique_ptr<WeightSource> source;
};

TEST_F(StackedParameters, FusedRowsAndColumnSlicesLandInPlace) {
  Model m;
  // rows 2..3 of q, then all of k, into one [4, 3] BF16 parameter; columns 1..2 of o.
  m.add_parameter("qk", {4, 3}, DType::BF16, {{"q.weight", Slice{0, 2, 4}, 0}, {"k.weight", Slice{}, 2}});
  m.add_parameter("o_part", {3, 2}, DType::F32, {{"o.weight", Slice{1, 1, 3}, 0}});
  const LoadReport r = loader->load_weights(m, *source);
  const TensorView qk = m.find("qk")->data.to(DType::F32);
  const std::vector<float> want_qk = {6, 7, 8, 9, 10, 11, 100, 101, 102, 103, 104, 105};
  EXPECT_EQ(std::vector<float>(qk.data<float>(), qk.data<float>() + 12), want_qk);
  const float* o = m.find("o_part")->data.data<float>();
  EXPECT_EQ(std::vector<float>(o, o + 6), (std::vector<float>{201, 202, 205, 206, 209, 210}));
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"qk", "o_part"}));
  // Only the slices' bytes were read: 2 rows of q, all of k, and o's columns of 3 rows.
  EXPECT_LE(r.bytes_read, uint64_t((6 + 6 + 6) * 4 + 3 * 4 * 4));
  EXPECT_EQ(r.bytes_written, uint64_t(12 * 2 + 6 * 4));
}

TEST_F(StackedParameters, AShardThatDoesNotFitIsAShapeMismatchNamingBoth) {
  Model m;
  m.add_parameter("qk", {4, 3}, DType::F32, {{"q.weight", Slice{0, 0, 2}, 0}, {"k.weight", Slice{}, 3}});
  loader->options().strict = false;
  const std::string msg = test::expect_error(ErrorCode::ShapeMismatch, [&] { loader->load_weights(m, *source); });
  EXPECT_NE(msg.find("k.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'qk'"), std::string::npos) << msg;
}

TEST_F(StackedParameters, AMissingShardIsReportedWithItsSource) {
  Model m;
  m.add_parameter("qkv", {8, 3}, DType::F32, {{"q.weight", Slice{}, 0}, {"k.weight", Slice{}, 4}, {"v.weight", Slice{}, 6}});
  m.add_parameter("o.weight", {3, 4}, DType::F32);
  const std::string msg = test::expect_error(ErrorCode::MissingParameters, [&] { loader->load_weights(m, *source); });
  EXPECT_NE(msg.find("qkv (from v.weight)"), std::string::npos) << msg;
}

TEST_F(StackedParameters, OneTensorMayFeedTwoParameters) {
  Model m;
  m.add_parameter("top", {2, 3}, DType::F32, {{"q.weight", Slice{0, 0, 2}, 0}});
  m.add_parameter("bottom", {2, 3}, DType::F32, {{"q.weight", Slice{0, 2, 4}, 0}});
  loader->options().strict = false;
  loader->load_weights(m, *source);
  EXPECT_EQ(m.find("bottom")->data.data<float>()[0], 6.0f);
  EXPECT_EQ(m.find("top")->data.data<float>()[5], 5.0f);
}

}  // namespace
}  // namespace wl
