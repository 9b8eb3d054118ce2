// The reference implementation's test cases (shared/testdata/safetensors-vectors): each file gives
// exactly the result EXPECTED.tsv states.
#include <fstream>
#include <set>
#include <sstream>

#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

fs::path vectors_dir() { return testdata_dir() / "safetensors-vectors"; }

Catalogue read_vector(const std::string& name) { return read_safetensors_catalogue((vectors_dir() / name).string()); }

void expect_vector_error(const std::string& name, ErrorCode code) {
  const std::string message = expect_error(code, [&] { read_vector(name); });
  EXPECT_NE(message.find(name), std::string::npos) << message;
}

void expect_tensor(const Catalogue& c, size_t index, const std::string& name, DType dtype, const Shape& shape) {
  ASSERT_LT(index, c.tensors.size());
  EXPECT_EQ(c.tensors[index].name, name);
  EXPECT_EQ(c.tensors[index].dtype, dtype);
  EXPECT_EQ(c.tensors[index].shape, shape);
}

// Every file EXPECTED.tsv lists has a test below, and the list has not grown behind our back.
TEST(SafetensorsVectors, EveryListedFileIsCovered) {
  WL_REQUIRE_TESTDATA();
  const std::set<std::string> covered = {
      "ok_i32_2x2_zeros.safetensors",
      "ok_serialize_f32_1x2x3.safetensors",
      "ok_serialize_f32_aligned_padded.safetensors",
      "ok_f4_1x2.safetensors",
      "ok_empty.safetensors",
      "ok_empty_with_metadata.safetensors",
      "ok_metadata_i32.safetensors",
      "ok_two_tensors_i32_f16.safetensors",
      "ok_i32_one_at_1_1.safetensors",
      "ok_whitespace_trailing.safetensors",
      "ok_whitespace_leading.safetensors",
      "ok_zero_sized_tensor.safetensors",
      "err_metadata_incomplete_buffer_trailing.safetensors",
      "err_metadata_incomplete_buffer_short.safetensors",
      "err_header_too_large.safetensors",
      "err_header_too_small_empty_file.safetensors",
      "err_invalid_header_length.safetensors",
      "err_header_non_utf8.safetensors",
      "err_header_not_json.safetensors",
      "err_tensor_invalid_info.safetensors",
      "err_validation_overflow_shape.safetensors",
      "err_validation_overflow_bytes.safetensors",
      "err_overlapping_offsets_json_attack.safetensors",
  };
  std::ifstream tsv(vectors_dir() / "EXPECTED.tsv");
  ASSERT_TRUE(tsv) << "EXPECTED.tsv missing";
  std::string line;
  std::getline(tsv, line);  // column titles
  std::set<std::string> listed;
  while (std::getline(tsv, line))
    if (!line.empty()) listed.insert(line.substr(0, line.find('\t')));
  EXPECT_EQ(listed, covered);
}

TEST(SafetensorsVectors, OkI32_2x2Zeros) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_i32_2x2_zeros.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "test", DType::I32, {2, 2});
  EXPECT_EQ(c.tensors[0].offset, 8u + 60u);
  EXPECT_EQ(c.tensors[0].nbytes, 16u);
  EXPECT_EQ(tensor_values<int32_t>(c, "test"), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_TRUE(c.metadata.empty());
}

TEST(SafetensorsVectors, OkSerializeF32_1x2x3) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_serialize_f32_1x2x3.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "attn.0", DType::F32, {1, 2, 3});
  EXPECT_EQ(c.tensors[0].offset, 8u + 64u);
  EXPECT_EQ(tensor_values<float>(c, "attn.0"), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(SafetensorsVectors, OkSerializeF32AlignedPadded) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_serialize_f32_aligned_padded.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "attn0", DType::F32, {1, 1, 2, 3});
  EXPECT_EQ(c.tensors[0].offset, 8u + 72u);
  EXPECT_EQ(tensor_values<float>(c, "attn0"), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

// F4: two E2M1 codes in one byte (0x00: +0, +0), decoded to F32.
TEST(SafetensorsVectors, OkF4Decoded) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_f4_1x2.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "attn.0", DType::F32, {1, 2});
  EXPECT_EQ(c.tensors[0].stored_type(), "F4");
  EXPECT_EQ(c.tensors[0].nbytes, 1u);
  const WeightSource source("safetensors", "test", c);
  EXPECT_EQ(source.load(source.at("attn.0"), DType::F32).data<float>()[1], 0.0f);
}

TEST(SafetensorsVectors, OkEmpty) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_empty.safetensors");
  EXPECT_TRUE(c.tensors.empty());
  EXPECT_TRUE(c.metadata.empty());
}

TEST(SafetensorsVectors, OkEmptyWithMetadata) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_empty_with_metadata.safetensors");
  EXPECT_TRUE(c.tensors.empty());
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"framework", "pt"}}));
}

TEST(SafetensorsVectors, OkMetadataI32) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_metadata_i32.safetensors");
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"framework", "pt"}}));
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "test1", DType::I32, {2, 2});
  EXPECT_EQ(tensor_values<int32_t>(c, "test1"), (std::vector<int32_t>{0, 0, 0, 0}));
}

TEST(SafetensorsVectors, OkTwoTensorsI32F16) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_two_tensors_i32_f16.safetensors");
  ASSERT_EQ(c.tensors.size(), 2u);
  expect_tensor(c, 0, "test1", DType::I32, {2, 2});
  expect_tensor(c, 1, "test2", DType::F16, {2, 2});
  EXPECT_EQ(c.tensors[0].offset, 8u + 128u);
  EXPECT_EQ(c.tensors[0].nbytes, 16u);
  EXPECT_EQ(c.tensors[1].offset, 8u + 128u + 16u);
  EXPECT_EQ(c.tensors[1].nbytes, 8u);
  EXPECT_EQ(tensor_values<int32_t>(c, "test1"), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(tensor_values<uint16_t>(c, "test2"), (std::vector<uint16_t>{0, 0, 0, 0}));
}

TEST(SafetensorsVectors, OkI32OneAt1_1) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_i32_one_at_1_1.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "test", DType::I32, {2, 2});
  EXPECT_EQ(tensor_values<int32_t>(c, "test"), (std::vector<int32_t>{0, 0, 0, 1}));
}

TEST(SafetensorsVectors, OkWhitespaceTrailing) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_whitespace_trailing.safetensors");
  EXPECT_TRUE(c.tensors.empty());
}

TEST(SafetensorsVectors, OkWhitespaceLeading) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_whitespace_leading.safetensors");
  EXPECT_TRUE(c.tensors.empty());
}

TEST(SafetensorsVectors, OkZeroSizedTensor) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_vector("ok_zero_sized_tensor.safetensors");
  ASSERT_EQ(c.tensors.size(), 1u);
  expect_tensor(c, 0, "test", DType::I32, {2, 0});
  EXPECT_EQ(c.tensors[0].nbytes, 0u);
  EXPECT_EQ(c.tensors[0].numel(), 0u);
}

TEST(SafetensorsVectors, ErrMetadataIncompleteBufferTrailing) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_metadata_incomplete_buffer_trailing.safetensors", ErrorCode::MetadataIncompleteBuffer);
}

TEST(SafetensorsVectors, ErrMetadataIncompleteBufferShort) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_metadata_incomplete_buffer_short.safetensors", ErrorCode::MetadataIncompleteBuffer);
}

TEST(SafetensorsVectors, ErrHeaderTooLarge) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_header_too_large.safetensors", ErrorCode::HeaderTooLarge);
}

TEST(SafetensorsVectors, ErrHeaderTooSmallEmptyFile) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_header_too_small_empty_file.safetensors", ErrorCode::HeaderTooSmall);
}

TEST(SafetensorsVectors, ErrInvalidHeaderLength) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_invalid_header_length.safetensors", ErrorCode::InvalidHeaderLength);
}

TEST(SafetensorsVectors, ErrHeaderNonUtf8) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_header_non_utf8.safetensors", ErrorCode::InvalidHeader);
}

TEST(SafetensorsVectors, ErrHeaderNotJson) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_header_not_json.safetensors", ErrorCode::InvalidHeaderDeserialization);
}

TEST(SafetensorsVectors, ErrTensorInvalidInfo) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_tensor_invalid_info.safetensors", ErrorCode::TensorInvalidInfo);
}

TEST(SafetensorsVectors, ErrValidationOverflowShape) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_validation_overflow_shape.safetensors", ErrorCode::ValidationOverflow);
}

TEST(SafetensorsVectors, ErrValidationOverflowBytes) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_validation_overflow_bytes.safetensors", ErrorCode::ValidationOverflow);
}

TEST(SafetensorsVectors, ErrOverlappingOffsetsJsonAttack) {
  WL_REQUIRE_TESTDATA();
  expect_vector_error("err_overlapping_offsets_json_attack.safetensors", ErrorCode::InvalidOffset);
}

// The format entry recognises every file whose length prefix is plausible and whose header opens
// with '{', and nothing else.
TEST(SafetensorsVectors, SniffRecognisesPlausibleFiles) {
  WL_REQUIRE_TESTDATA();
  const std::set<std::string> not_recognised = {
      "err_header_too_large.safetensors", "err_header_too_small_empty_file.safetensors",
      "err_invalid_header_length.safetensors", "err_header_non_utf8.safetensors"};
  for (const auto& entry : fs::directory_iterator(vectors_dir())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".safetensors") continue;
    const std::string bytes = read_bytes(entry.path().string());
    const std::string head = bytes.substr(0, 4096);
    const bool sniffed = safetensors_format().sniff(
        std::as_bytes(std::span(head.data(), head.size())), static_cast<uint64_t>(bytes.size()));
    EXPECT_EQ(sniffed, !not_recognised.contains(name)) << name;
  }
  const fs::path zip = testdata_dir() / "pytorch-zip" / "candle_test.pt";
  const std::string bytes = read_bytes(zip.string());
  const std::string head = bytes.substr(0, 4096);
  EXPECT_FALSE(safetensors_format().sniff(std::as_bytes(std::span(head.data(), head.size())), bytes.size()));
}

}  // namespace
}  // namespace wl::test
