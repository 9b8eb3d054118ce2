#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "weightloader/formats/custom_binary.hpp"

namespace wl {
namespace {

using test::expect_error;
using test::TempDir;

std::string floats(size_t count) { return std::string(count * sizeof(float), '\0'); }

// A checkpoint directory with the given meta.txt text and model.bin bytes.
void make_checkpoint(const TempDir& dir, const std::string& meta, const std::string& bin) {
  test::write_bytes(dir.file("meta.txt"), meta);
  test::write_bytes(dir.file("model.bin"), bin);
}

TEST(CustomBinaryReader, ReadsShapesOffsetsAndScalars) {
  TempDir dir;
  // Blank lines are skipped; `b:` is a scalar; `c` has no elements; no trailing newline.
  make_checkpoint(dir, "a:2,3\n\nb:\n  \nc:0,4\nd:5", floats(6 + 1 + 0 + 5));
  const Catalogue cat = read_custom_binary_catalogue(dir.path().string());
  ASSERT_EQ(cat.tensors.size(), 4u);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  const std::vector<Shape> shapes = {{2, 3}, {}, {0, 4}, {5}};
  const std::vector<uint64_t> offsets = {0, 24, 28, 28};
  const std::vector<uint64_t> sizes = {24, 4, 0, 20};
  for (size_t i = 0; i < 4; ++i) {
    const TensorInfo& t = cat.tensors[i];
    EXPECT_EQ(t.name, names[i]);
    EXPECT_EQ(t.shape, shapes[i]) << t.name;
    EXPECT_EQ(t.offset, offsets[i]) << t.name;
    EXPECT_EQ(t.nbytes, sizes[i]) << t.name;
    EXPECT_EQ(t.dtype, DType::F32);
    EXPECT_EQ(cat.file_of(t), dir.file("model.bin"));
    EXPECT_TRUE(t.strides.empty());
    EXPECT_EQ(t.decoder, nullptr);
  }
  EXPECT_TRUE(cat.metadata.empty());
}

TEST(CustomBinaryReader, AcceptsTheDirectoryOrEitherFile) {
  TempDir dir;
  make_checkpoint(dir, "w:3\n", floats(3));
  for (const std::string& path : {dir.path().string(), dir.file("meta.txt"), dir.file("model.bin")}) {
    const Catalogue cat = read_custom_binary_catalogue(path);
    ASSERT_EQ(cat.tensors.size(), 1u) << path;
    EXPECT_EQ(cat.file_of(cat.tensors[0]), dir.file("model.bin")) << path;
  }
}

TEST(CustomBinaryReader, AcceptsCrLfLineEndings) {
  TempDir dir;
  make_checkpoint(dir, "a:2\r\nb:1,1\r\n", floats(3));
  const Catalogue cat = read_custom_binary_catalogue(dir.path().string());
  ASSERT_EQ(cat.tensors.size(), 2u);
  EXPECT_EQ(cat.tensors[0].name, "a");
  EXPECT_EQ(cat.tensors[1].shape, (Shape{1, 1}));
}

TEST(CustomBinaryReader, EmptyMetaIsAnEmptyCheckpoint) {
  TempDir dir;
  make_checkpoint(dir, "\n\n", "");
  EXPECT_TRUE(read_custom_binary_catalogue(dir.path().string()).tensors.empty());
}

struct BadLine {
  std::string meta;       // the whole meta.txt
  size_t line;            // the line the error must name
  std::string text;       // that line's text
  std::string fault;      // what must be said about it
};

TEST(CustomBinaryReader, MalformedLinesNameLineTextAndFault) {
  const std::vector<BadLine> cases = {
      {"a:1\nnocolon\n", 2, "nocolon", "missing ':'"},
      {"a:1\n\n:2,3\n", 3, ":2,3", "empty tensor name"},
      {"a:2,x\n", 1, "a:2,x", "dim 1 'x' is not a number"},
      {"a: 2\n", 1, "a: 2", "dim 0 ' 2' is not a number"},
      {"a:+2\n", 1, "a:+2", "dim 0 '+2' is not a number"},
      {"a:2.5\n", 1, "a:2.5", "dim 0 '2.5' is not a number"},
      {"a:2,-3\n", 1, "a:2,-3", "dim 1 '-3' is negative"},
      {"a:2,,3\n", 1, "a:2,,3", "dim 1 is empty"},
      {"a:2,3,\n", 1, "a:2,3,", "dim 2 is empty"},
      {"a:,\n", 1, "a:,", "dim 0 is empty"},
      {"a:18446744073709551616\n", 1, "a:18446744073709551616", "dim 0 '18446744073709551616' overflows u64"},
      {"a:b:2\n", 1, "a:b:2", "more than one ':'"},
  };
  for (const BadLine& c : cases) {
    TempDir dir;
    make_checkpoint(dir, c.meta, "");
    const std::string what =
        expect_error(ErrorCode::MetaLineInvalid, [&] { read_custom_binary_catalogue(dir.path().string()); });
    EXPECT_NE(what.find(dir.file("meta.txt")), std::string::npos) << what;
    EXPECT_NE(what.find("line " + std::to_string(c.line) + " '" + c.text + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(c.fault), std::string::npos) << what;
  }
}

TEST(CustomBinaryReader, LargestDimStillParses) {
  TempDir dir;
  // 2^64 - 1 parses as a dim; the byte size then overflows, which is a different rule.
  make_checkpoint(dir, "a:18446744073709551615\n", "");
  expect_error(ErrorCode::ValidationOverflow, [&] { read_custom_binary_catalogue(dir.path().string()); });
}

TEST(CustomBinaryReader, DuplicateNameNamesBothLines) {
  TempDir dir;
  make_checkpoint(dir, "w:1\nb:1\n\nw:2\n", floats(4));
  const std::string what =
      expect_error(ErrorCode::DuplicateTensorName, [&] { read_custom_binary_catalogue(dir.path().string()); });
  EXPECT_NE(what.find("tensor 'w'"), std::string::npos) << what;
  EXPECT_NE(what.find("line 1"), std::string::npos) << what;
  EXPECT_NE(what.find("line 4"), std::string::npos) << what;
}

TEST(CustomBinaryReader, OverflowingSizesAreValidationOverflow) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a:4294967296,4294967297\n", "element count"},                    // numel > 2^64
      {"a:4611686018427387904\n", "byte size"},                          // 2^62 floats = 2^64 bytes
  };
  for (const auto& [meta, fault] : cases) {
    TempDir dir;
    make_checkpoint(dir, meta, "");
    const std::string what =
        expect_error(ErrorCode::ValidationOverflow, [&] { read_custom_binary_catalogue(dir.path().string()); });
    EXPECT_NE(what.find(fault), std::string::npos) << what;
  }
  TempDir dir;  // 4 + 2^63 + 2^63 bytes: the sum overflows at the third tensor
  make_checkpoint(dir, "a:1\nb:2305843009213693952\nc:2305843009213693952\n", "");
  const std::string what =
      expect_error(ErrorCode::ValidationOverflow, [&] { read_custom_binary_catalogue(dir.path().string()); });
  EXPECT_NE(what.find("sum"), std::string::npos) << what;
  EXPECT_NE(what.find("line 3"), std::string::npos) << what;
  EXPECT_NE(what.find("tensor 'c'"), std::string::npos) << what;
}

TEST(CustomBinaryReader, BinSizeMismatchGivesBothSizes) {
  for (size_t values : {size_t(5), size_t(7)}) {
    TempDir dir;
    make_checkpoint(dir, "a:2,3\n", floats(values));
    const std::string what =
        expect_error(ErrorCode::BinSizeMismatch, [&] { read_custom_binary_catalogue(dir.path().string()); });
    EXPECT_NE(what.find(dir.file("model.bin")), std::string::npos) << what;
    EXPECT_NE(what.find("holds " + std::to_string(values * 4) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("declares 24 bytes"), std::string::npos) << what;
  }
}

TEST(CustomBinaryReader, MissingFilesAreFileNotFound) {
  {
    TempDir dir;
    test::write_bytes(dir.file("model.bin"), "");
    const std::string what =
        expect_error(ErrorCode::FileNotFound, [&] { read_custom_binary_catalogue(dir.path().string()); });
    EXPECT_NE(what.find(dir.file("meta.txt")), std::string::npos) << what;
  }
  {
    TempDir dir;
    test::write_bytes(dir.file("meta.txt"), "a:1\n");
    const std::string what =
        expect_error(ErrorCode::FileNotFound, [&] { read_custom_binary_catalogue(dir.file("meta.txt")); });
    EXPECT_NE(what.find(dir.file("model.bin")), std::string::npos) << what;
  }
  TempDir dir;
  const std::string missing = dir.file("no-such-checkpoint");
  const std::string what = expect_error(ErrorCode::FileNotFound, [&] { read_custom_binary_catalogue(missing); });
  EXPECT_NE(what.find(missing), std::string::npos) << what;
}

TEST(CustomBinaryReader, OtherFileIsInvalidArgument) {
  TempDir dir;
  make_checkpoint(dir, "a:1\n", floats(1));
  test::write_bytes(dir.file("weights.txt"), "a:1\n");
  expect_error(ErrorCode::InvalidArgument, [&] { read_custom_binary_catalogue(dir.file("weights.txt")); });
}

}  // namespace
}  // namespace wl
