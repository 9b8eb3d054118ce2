// The default load_weights through the `local` loader: name mapping, conversion, shapes,
// strictness, slices and the report.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TensorView iota(DType dtype, Shape shape, float start = 0) {
  TensorView f = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = start + float(i);
  return f.to(dtype);
}

class LoadWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(dir.file("model.safetensors"), {{"model.embed.weight", iota(DType::F32, {4, 3})},
                                                       {"model.norm.weight", iota(DType::F32, {3}, 100)},
                                                       {"lm_head.weight", iota(DType::F16, {4, 3}, 50)}});
  }
  std::unique_ptr<WeightLoader> loader(Kwargs kw = {}) { return WeightLoaderRegistry::with_builtins()->create("local", kw); }
  test::TempDir dir;
};

TEST_F(LoadWeights, MirrorModelLoadsEverythingExactly) {
  auto l = loader();
  auto src = l->get_weights(dir.path().string());
  Model m = l->mirror_model(*src);
  LoadReport r = l->load_weights(m, *src);
  EXPECT_EQ(r.loaded.size(), 3u);
  EXPECT_TRUE(r.converted.empty());
  EXPECT_EQ(r.bytes_read, 4 * 3 * 4 + 3 * 4 + 4 * 3 * 2u);
  EXPECT_EQ(m.find("model.norm.weight")->data.data<float>()[2], 102.0f);
  EXPECT_EQ(f16_bits_to_f32(m.find("lm_head.weight")->data.data<uint16_t>()[11]), 61.0f);
  EXPECT_EQ(r.format, "safetensors");
}

TEST_F(LoadWeights, ConvertsToTheParameterDtype) {
  auto l = loader({{"dtype", std::string("bf16")}});
  auto src = l->get_weights(dir.path().string());
  Model m = l->mirror_model(*src);
  LoadReport r = l->load_weights(m, *src);
  ASSERT_EQ(r.converted.size(), 3u);
  EXPECT_EQ(m.find("model.embed.weight")->dtype(), DType::BF16);
  EXPECT_EQ(bf16_bits_to_f32(m.find("model.embed.weight")->data.data<uint16_t>()[5]), 5.0f);
  EXPECT_EQ(bf16_bits_to_f32(m.find("lm_head.weight")->data.data<uint16_t>()[0]), 50.0f);
}

TEST_F(LoadWeights, StrictListsEveryMissingAndUnexpectedNameWithAPrefixHint) {
  Model m;
  m.add_parameter("embed.weight", {4, 3}, DType::F32);
  m.add_parameter("norm.weight", {3}, DType::F32);
  m.add_parameter("extra.bias", {3}, DType::F32);
  auto l = loader();
  auto src = l->get_weights(dir.path().string());
  const std::string msg = test::expect_error(ErrorCode::MissingParameters, [&] { l->load_weights(m, *src); });
  for (const char* name : {"embed.weight", "norm.weight", "extra.bias", "model.embed.weight", "lm_head.weight"})
    EXPECT_NE(msg.find(name), std::string::npos) << name << " not in: " << msg;
  EXPECT_NE(msg.find("strip_prefix=model."), std::string::npos) << msg;
}

TEST_F(LoadWeights, StripPrefixAndNonStrictReport) {
  Model m;
  m.add_parameter("embed.weight", {4, 3}, DType::F32);
  m.add_parameter("norm.weight", {3}, DType::BF16);
  m.add_parameter("extra.bias", {3}, DType::F32);
  auto l = loader({{"strip_prefix", std::string("model.")}, {"strict", false}, {"drop", std::string("lm_.*")}});
  auto src = l->get_weights(dir.path().string());
  LoadReport r = l->load_weights(m, *src);
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"embed.weight", "norm.weight"}));
  EXPECT_EQ(r.missing, (std::vector<std::string>{"extra.bias"}));
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"lm_head.weight"}));
  EXPECT_TRUE(r.unexpected.empty());
  ASSERT_EQ(r.converted.size(), 1u);
  EXPECT_EQ(r.converted[0].from, "F32");
  EXPECT_NE(r.to_string().find("missing     1 (extra.bias)"), std::string::npos) << r.to_string();
}

TEST_F(LoadWeights, UnexpectedOnlyIsItsOwnCode) {
  Model m;
  m.add_parameter("model.embed.weight", {4, 3}, DType::F32);
  auto l = loader();
  auto src = l->get_weights(dir.path().string());
  test::expect_error(ErrorCode::UnexpectedTensors, [&] { l->load_weights(m, *src); });
}

TEST_F(LoadWeights, ShapeMismatchNamesBothShapesAndReshapeNeedsTheOption) {
  Model m;
  m.add_parameter("model.embed.weight", {2, 6}, DType::F32);
  m.add_parameter("model.norm.weight", {3}, DType::F32);
  m.add_parameter("lm_head.weight", {4, 3}, DType::F32);
  auto strict = loader();
  auto src = strict->get_weights(dir.path().string());
  const std::string msg = test::expect_error(ErrorCode::ShapeMismatch, [&] { strict->load_weights(m, *src); });
  EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 6]"), std::string::npos) << msg;
  auto lenient = loader({{"allow_reshape", true}});
  LoadReport r = lenient->load_weights(m, *src);
  ASSERT_EQ(r.reshaped.size(), 1u);
  EXPECT_EQ(m.find("model.embed.weight")->data.data<float>()[11], 11.0f);

  Model wrong;
  wrong.add_parameter("model.embed.weight", {5}, DType::F32);
  auto l = loader({{"allow_reshape", true}, {"strict", false}});
  test::expect_error(ErrorCode::ShapeMismatch, [&] { l->load_weights(wrong, *src); });
}

TEST_F(LoadWeights, TwoTensorsOntoOneParameterIsAnError) {
  Model m;
  m.add_parameter("w", {4, 3}, DType::F32);
  auto l = loader({{"rename", std::string("model.embed.weight=w;lm_head.weight=w")}, {"strict", false}});
  auto src = l->get_weights(dir.path().string());
  test::expect_error(ErrorCode::DuplicateTarget, [&] { l->load_weights(m, *src); });
}

TEST_F(LoadWeights, SourceReadsSlicesAlongAnyDimension) {
  auto src = loader()->get_weights(dir.path().string());
  const TensorInfo& t = src->at("model.embed.weight");  // [[0,1,2],[3,4,5],[6,7,8],[9,10,11]]
  float rows[6];
  EXPECT_EQ(src->read(t, DType::F32, rows, Slice{0, 1, 3}), 24u);
  EXPECT_EQ(std::vector<float>(rows, rows + 6), (std::vector<float>{3, 4, 5, 6, 7, 8}));
  double cols[8];
  EXPECT_EQ(src->read(t, DType::F64, cols, Slice{1, 1, 3}), 32u);
  EXPECT_EQ(std::vector<double>(cols, cols + 8), (std::vector<double>{1, 2, 4, 5, 7, 8, 10, 11}));
  test::expect_error(ErrorCode::SliceOutOfBounds, [&] { src->read(t, DType::F32, rows, Slice{2, 0, 1}); });
  test::expect_error(ErrorCode::SliceOutOfBounds, [&] { src->read(t, DType::F32, rows, Slice{0, 3, 2}); });
  test::expect_error(ErrorCode::TensorNotFound, [&] { src->at("nope"); });
}

TEST_F(LoadWeights, ZeroCopyViewMapsTheFile) {
  auto src = loader()->get_weights(dir.path().string());
  auto v = src->view(src->at("model.norm.weight"));
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->storage()->writable());
  EXPECT_EQ(v->data<float>()[1], 101.0f);
}

TEST_F(LoadWeights, ManyChunksAndThreadsGiveTheSameBytes) {
  test::TempDir big;
  TensorView a = iota(DType::F32, {1000, 37});
  write_safetensors(big.file("m.safetensors"), {{"a", a}});
  auto l = loader({{"concurrency", int64_t{4}}, {"dtype", std::string("f64")}});
  l->options().io.chunk_bytes = 1000;  // many chunks, not a multiple of the row size
  auto src = l->get_weights(big.path().string());
  Model m = l->mirror_model(*src);
  uint64_t calls = 0, last = 0;
  l->options().io.progress = [&](uint64_t done, uint64_t total) {
    ++calls;
    EXPECT_GE(done, last);
    last = done;
    EXPECT_EQ(total, a.nbytes());
    return true;
  };
  LoadReport r = l->load_weights(m, *src);
  EXPECT_GT(calls, 100u);
  EXPECT_EQ(last, a.nbytes());
  for (uint64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(m.find("a")->data.data<double>()[i], double(i));
  EXPECT_EQ(r.concurrency, 4u);
}

TEST_F(LoadWeights, ProgressCallbackCancels) {
  auto l = loader();
  l->options().io.chunk_bytes = 4;
  l->options().io.progress = [](uint64_t done, uint64_t) { return done < 8; };
  auto src = l->get_weights(dir.path().string());
  Model m = l->mirror_model(*src);
  test::expect_error(ErrorCode::Cancelled, [&] { l->load_weights(m, *src); });
}

TEST_F(LoadWeights, FileShrunkAfterCatalogueIsTruncatedNotACrash) {
  auto l = loader();
  auto src = l->get_weights(dir.path().string());
  Model m = l->mirror_model(*src);
  std::filesystem::resize_file(dir.file("model.safetensors"), 100);
  test::expect_error(ErrorCode::Truncated, [&] { l->load_weights(m, *src); });
}

TEST(LocalLoader, NoMatchingFileNamesTheDirectoryAndPattern) {
  test::TempDir dir;
  test::write_bytes(dir.file("notes.txt"), "hello");
  const std::string msg = test::expect_error(ErrorCode::NoMatchingFiles, [&] {
    WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.path().string());
  });
  EXPECT_NE(msg.find(dir.path().string()), std::string::npos);
  EXPECT_NE(msg.find("*.safetensors"), std::string::npos);
  test::expect_error(ErrorCode::FileNotFound, [&] {
    WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.file("missing"));
  });
}

TEST(LocalLoader, FilePatternSelectsFilesAndDuplicatesAcrossFilesAreErrors) {
  test::TempDir dir;
  write_safetensors(dir.file("a.safetensors"), {{"x", iota(DType::F32, {2})}});
  write_safetensors(dir.file("b.safetensors"), {{"x", iota(DType::F32, {2})}});
  write_safetensors(dir.file("c.st"), {{"y", iota(DType::F32, {2})}});
  test::expect_error(ErrorCode::TensorInTwoFiles,
                     [&] { WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.path().string()); });
  auto src = WeightLoaderRegistry::with_builtins()
                 ->create("local", {{"file_pattern", std::string("*.st")}})
                 ->get_weights(dir.path().string());
  ASSERT_EQ(src->tensors().size(), 1u);
  EXPECT_EQ(src->tensors()[0].name, "y");
}

}  // namespace
}  // namespace wl
