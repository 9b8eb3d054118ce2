// Sharded checkpoints: model.safetensors.index.json and its shards.
#include <cstring>

#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

TensorView filled(DType dtype, Shape shape, uint8_t byte) {
  TensorView t = TensorView::empty(dtype, std::move(shape));
  std::memset(t.raw(), byte, t.nbytes());
  return t;
}

// A model directory with two shards, an index naming both, and a stale consolidated file that
// is not listed (and is not even a valid safetensors file) and must therefore never be opened.
class SafetensorsIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                      {{"embed.weight", filled(DType::F32, {4, 2}, 1)}, {"norm.weight", filled(DType::F32, {2}, 2)}},
                      {{"format", "pt"}});
    write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"lm_head.weight", filled(DType::BF16, {4, 2}, 3)}},
                      {{"format", "pt"}, {"shard", "2"}});
    write_bytes(dir.file("model.safetensors"), "not a safetensors file");
  }

  // An index with the default weight_map, or `weight_map` in its place.
  std::string write_index(const std::string& weight_map = kWeightMap) const {
    const std::string path = dir.file("model.safetensors.index.json");
    write_bytes(path, R"({"metadata":{"total_size":56,"note":"x"},"weight_map":)" + weight_map + "}");
    return path;
  }

  std::string expect_index_error(ErrorCode code, const std::string& weight_map) const {
    const std::string index = write_index(weight_map);
    const std::string message = expect_error(code, [&] { open_safetensors_index(index); });
    EXPECT_NE(message.find(index), std::string::npos) << "message should name the index: " << message;
    return message;
  }

  static constexpr const char* kWeightMap = R"({"embed.weight":"model-00001-of-00002.safetensors",
      "norm.weight":"model-00001-of-00002.safetensors","lm_head.weight":"model-00002-of-00002.safetensors"})";
  TempDir dir;
};

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
}

TEST_F(SafetensorsIndex, MergesTheListedShardsOnly) {
  const Catalogue c = open_safetensors_index(write_index());
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].name, "embed.weight");
  EXPECT_EQ(c.tensors[1].name, "norm.weight");
  EXPECT_EQ(c.tensors[2].name, "lm_head.weight");
  EXPECT_EQ(c.file_of(c.tensors[0]), dir.file("model-00001-of-00002.safetensors"));
  EXPECT_EQ(c.file_of(c.tensors[2]), dir.file("model-00002-of-00002.safetensors"));
  // Each shard's catalogue names its own file 0; merged, the files are listed once each and the
  // second shard's tensors moved to index 1.
  EXPECT_EQ(c.files, (std::vector<std::string>{dir.file("model-00001-of-00002.safetensors"), dir.file("model-00002-of-00002.safetensors")}));
  EXPECT_EQ(c.tensors[0].source, 0u);
  EXPECT_EQ(c.tensors[1].source, 0u);
  EXPECT_EQ(c.tensors[2].source, 1u);
  EXPECT_EQ(c.tensors[2].dtype, DType::BF16);
  EXPECT_EQ(c.tensors[2].shape, (Shape{4, 2}));
  EXPECT_EQ(tensor_bytes(c, "lm_head.weight"), std::vector<std::byte>(16, std::byte{3}));
  EXPECT_EQ(tensor_bytes(c, "norm.weight"), std::vector<std::byte>(8, std::byte{2}));
  const std::map<std::string, std::string> metadata = {
      {"total_size", "56"}, {"note", "x"}, {"format", "pt"}, {"shard", "2"}};
  EXPECT_EQ(c.metadata, metadata);
}

TEST_F(SafetensorsIndex, ShardsInASubdirectoryAndDotSegments) {
  fs::create_directory(dir.path() / "sub");
  fs::rename(dir.file("model-00002-of-00002.safetensors"), dir.path() / "sub" / "last.safetensors");
  const Catalogue c = open_safetensors_index(write_index(R"({"embed.weight":"./model-00001-of-00002.safetensors",
      "norm.weight":"model-00001-of-00002.safetensors","lm_head.weight":"sub//last.safetensors"})"));
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.file_of(c.tensors[2]), (dir.path() / "sub" / "last.safetensors").string());
}

TEST_F(SafetensorsIndex, IndexInvalidNotJson) {
  const std::string index = dir.file("model.safetensors.index.json");
  write_bytes(index, "{\"weight_map\": {");
  expect_contains(expect_error(ErrorCode::IndexInvalid, [&] { open_safetensors_index(index); }), "not JSON");
}

TEST_F(SafetensorsIndex, IndexInvalidStructure) {
  const std::string index = dir.file("model.safetensors.index.json");
  for (const std::string text : {"[]", R"({"metadata":{}})", R"({"weight_map":["a.safetensors"]})"}) {
    SCOPED_TRACE(text);
    write_bytes(index, text);
    expect_error(ErrorCode::IndexInvalid, [&] { open_safetensors_index(index); });
  }
}

TEST_F(SafetensorsIndex, IndexInvalidValueNotAString) {
  const std::string message = expect_index_error(ErrorCode::IndexInvalid, R"({"embed.weight":1})");
  expect_contains(message, "tensor 'embed.weight'");
  expect_contains(message, "not a file name");
}

TEST_F(SafetensorsIndex, IndexInvalidTensorListedTwice) {
  const std::string message = expect_index_error(
      ErrorCode::IndexInvalid,
      R"({"norm.weight":"model-00001-of-00002.safetensors","norm.weight":"model-00002-of-00002.safetensors"})");
  expect_contains(message, "listed twice");
}

// Never a file outside the model directory: refused before anything is opened, even if it exists.
TEST_F(SafetensorsIndex, IndexInvalidParentDirectory) {
  fs::create_directory(dir.path() / "inner");
  fs::copy_file(dir.file("model-00002-of-00002.safetensors"), dir.file("x.safetensors"));
  const std::string index = dir.file("inner/model.safetensors.index.json");
  for (const std::string target : {"../x.safetensors", "sub/../../x.safetensors", ".."}) {
    SCOPED_TRACE(target);
    write_bytes(index, R"({"weight_map":{"lm_head.weight":")" + target + R"("}})");
    expect_contains(expect_error(ErrorCode::IndexInvalid, [&] { open_safetensors_index(index); }), "\"..\"");
  }
}

TEST_F(SafetensorsIndex, IndexInvalidAbsolutePath) {
  const std::string message = expect_index_error(
      ErrorCode::IndexInvalid, R"({"lm_head.weight":")" + dir.file("model-00002-of-00002.safetensors") + R"("})");
  expect_contains(message, "is absolute");
}

TEST_F(SafetensorsIndex, IndexInvalidEmptyFileName) {
  expect_index_error(ErrorCode::IndexInvalid, R"({"lm_head.weight":""})");
  expect_index_error(ErrorCode::IndexInvalid, R"({"lm_head.weight":"sub/"})");
}

TEST_F(SafetensorsIndex, IndexFileMissing) {
  const std::string message = expect_index_error(
      ErrorCode::IndexFileMissing,
      R"({"embed.weight":"model-00001-of-00002.safetensors","norm.weight":"model-00001-of-00002.safetensors",
          "lm_head.weight":"model-00002-of-00002.safetensors","extra.weight":"model-00003-of-00003.safetensors"})");
  expect_contains(message, "model-00003-of-00003.safetensors");
  expect_contains(message, "tensor 'extra.weight'");
}

TEST_F(SafetensorsIndex, IndexTensorMissing) {
  const std::string message = expect_index_error(
      ErrorCode::IndexTensorMissing,
      R"({"embed.weight":"model-00001-of-00002.safetensors","norm.weight":"model-00001-of-00002.safetensors",
          "lm_head.weight":"model-00002-of-00002.safetensors","ghost":"model-00002-of-00002.safetensors"})");
  expect_contains(message, "tensor 'ghost'");
  expect_contains(message, "model-00002-of-00002.safetensors");
}

TEST_F(SafetensorsIndex, IndexTensorUnlistedNotNamedAtAll) {
  const std::string message = expect_index_error(
      ErrorCode::IndexTensorUnlisted,
      R"({"embed.weight":"model-00001-of-00002.safetensors","lm_head.weight":"model-00002-of-00002.safetensors"})");
  expect_contains(message, "tensor 'norm.weight'");
  expect_contains(message, "does not list it");
}

TEST_F(SafetensorsIndex, IndexTensorUnlistedNamedForAnotherFile) {
  const std::string message = expect_index_error(
      ErrorCode::IndexTensorUnlisted,
      R"({"embed.weight":"model-00001-of-00002.safetensors","norm.weight":"model-00002-of-00002.safetensors",
          "lm_head.weight":"model-00002-of-00002.safetensors"})");
  expect_contains(message, "tensor 'norm.weight'");
  expect_contains(message, "\"model-00001-of-00002.safetensors\" holds this tensor but the index places it in "
                           "\"model-00002-of-00002.safetensors\"");
}

TEST_F(SafetensorsIndex, TensorInTwoFiles) {
  write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                    {{"lm_head.weight", filled(DType::BF16, {4, 2}, 3)}, {"norm.weight", filled(DType::F32, {2}, 2)}});
  const std::string message = expect_index_error(ErrorCode::TensorInTwoFiles, kWeightMap);
  expect_contains(message, "tensor 'norm.weight'");
  expect_contains(message, "model-00001-of-00002.safetensors");
  expect_contains(message, "model-00002-of-00002.safetensors");
}

TEST_F(SafetensorsIndex, ShardErrorsPassThrough) {
  write_bytes(dir.file("model-00002-of-00002.safetensors"), "tiny");
  const std::string message = expect_error(ErrorCode::HeaderTooSmall, [&] { open_safetensors_index(write_index()); });
  expect_contains(message, "model-00002-of-00002.safetensors");
}

TEST_F(SafetensorsIndex, MissingIndexFile) {
  expect_error(ErrorCode::FileNotFound, [&] { open_safetensors_index(dir.file("nope.index.json")); });
}

}  // namespace
}  // namespace wl::test
