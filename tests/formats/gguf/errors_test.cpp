// One hand-made bad GGUF file per rule, each expected to fail with its own code and a message
// that names the file and the offending numbers.
#include <fmt/format.h>

#include "formats/gguf/gguf_test_util.hpp"

namespace wl::test {
namespace {

// Reads `b` as a catalogue, expects `code`, checks the message names the file; returns it.
std::string expect_gguf_error(ErrorCode code, const GgufBytes& b) {
  TempDir dir;
  const std::string path = make_gguf(dir, b);
  const std::string message = expect_error(code, [&] { read_gguf_catalogue(path); });
  expect_contains(message, path);
  return message;
}

// A valid file with one key and two F32 tensors, for truncation tests.
GgufBytes valid_file() {
  GgufBytes b;
  b.header(2, 2).kv_str("general.name", "tiny").key("general.tags", 9).le<uint32_t>(8).le<uint64_t>(1).str("x");
  b.tensor("a", {2}, 0, 0).tensor("b", {3}, 0, 32).pad();
  b.le<float>(1).le<float>(2).pad().le<float>(3).le<float>(4).le<float>(5);
  return b;
}

TEST(GgufErrors, ValidFileIsValid) {
  TempDir dir;
  EXPECT_EQ(read_gguf_catalogue(make_gguf(dir, valid_file())).tensors.size(), 2u);
}

// Every proper prefix of a valid file is rejected with a truncation-type error, never a crash.
TEST(GgufErrors, EveryTruncationIsRejected) {
  const std::string full = valid_file().str();
  TempDir dir;
  const std::string path = dir.file("cut.gguf");
  for (size_t n = 0; n < full.size(); ++n) {
    write_bytes(path, full.substr(0, n));
    try {
      read_gguf_catalogue(path);
      ADD_FAILURE() << "a file cut at " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::Truncated || e.code() == ErrorCode::GgufCountTooLarge ||
                  e.code() == ErrorCode::GgufTensorOutOfBounds)
          << n << ": " << e.what();
    }
  }
}

TEST(GgufErrors, TruncatedAtStructuralBoundaries) {
  GgufBytes magic_only;
  magic_only.raw("GGUF");
  expect_contains(expect_gguf_error(ErrorCode::Truncated, magic_only), "the version needs 4 bytes at offset 4");
  GgufBytes no_counts;
  no_counts.raw("GGUF").le<uint32_t>(3);
  expect_contains(expect_gguf_error(ErrorCode::Truncated, no_counts), "the tensor count");
  GgufBytes no_value;
  no_value.header(0, 1).key("k", 10);
  expect_contains(expect_gguf_error(ErrorCode::Truncated, no_value), "the value of 'k' needs 8 bytes");
  GgufBytes no_type;  // (a name long enough for the 24 bytes a tensor info needs at least)
  no_type.header(1, 0).str("tensor").le<uint32_t>(1).le<uint64_t>(4);
  expect_contains(expect_gguf_error(ErrorCode::Truncated, no_type), "the type of tensor 'tensor' needs 4 bytes");
  GgufBytes no_dims;
  no_dims.header(1, 0).str("tensor").le<uint32_t>(2).raw(std::string(10, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::Truncated, no_dims), "the dimensions of tensor 'tensor' needs 16");
}

TEST(GgufErrors, BadMagic) {
  GgufBytes b;
  b.raw("GGML").le<uint32_t>(3).le<uint64_t>(0).le<uint64_t>(0);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadMagic, b), "47 47 4d 4c");
}

TEST(GgufErrors, BadVersion) {
  for (const auto& [version, text] : {std::pair<uint32_t, const char*>{1, "obsolete"}, {4, "GGUF version 4"},
                                      {0x03000000, "big-endian"}, {0, "GGUF version 0"}}) {
    GgufBytes b;
    b.header(0, 0, version);
    expect_contains(expect_gguf_error(ErrorCode::GgufBadVersion, b), text);
  }
}

// Counts that claim gigabytes are refused before anything is allocated.
TEST(GgufErrors, CountsLargerThanTheFile) {
  GgufBytes tensors;
  tensors.header(1ull << 40, 0);
  expect_contains(expect_gguf_error(ErrorCode::GgufCountTooLarge, tensors), "the tensor count is 1099511627776");
  GgufBytes keys;
  keys.header(0, 1ull << 62);
  expect_contains(expect_gguf_error(ErrorCode::GgufCountTooLarge, keys), "the metadata count is 4611686018427387904");
  GgufBytes string;
  string.header(0, 1).le<uint64_t>(1000).raw(std::string(20, 'k'));
  expect_contains(expect_gguf_error(ErrorCode::GgufCountTooLarge, string), "the length of metadata key 0 is 1000");
  GgufBytes array;
  array.header(0, 1).key("a", 9).le<uint32_t>(10).le<uint64_t>(60'000'000).raw(std::string(64, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufCountTooLarge, array), "60000000");
  GgufBytes strings;  // each string needs at least its 8-byte length
  strings.header(0, 1).key("a", 9).le<uint32_t>(8).le<uint64_t>(5).raw(std::string(39, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufCountTooLarge, strings), "at 8 bytes each");
  // The tensor count is checked again once the metadata has been read.
  GgufBytes late;
  late.header(2, 1).kv_str("k", std::string(40, 'x')).raw(std::string(40, '\0'));
  expect_gguf_error(ErrorCode::GgufCountTooLarge, late);
}

TEST(GgufErrors, StringTooLong) {
  GgufBytes b;
  b.header(0, 1).key("k", 8).le<uint64_t>(kGgufMaxStringBytes + 1);
  expect_contains(expect_gguf_error(ErrorCode::GgufStringTooLong, b), "67108865 bytes long");
}

TEST(GgufErrors, ArrayTooLong) {
  GgufBytes b;
  b.header(0, 1).key("k", 9).le<uint32_t>(0).le<uint64_t>(kGgufMaxArrayElements + 1);
  expect_contains(expect_gguf_error(ErrorCode::GgufArrayTooLong, b), "67108865 elements");
}

TEST(GgufErrors, BadValueType) {
  GgufBytes scalar;
  scalar.header(0, 1).key("k", 13).le<uint32_t>(0);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadValueType, scalar), "the type of 'k' is 13");
  GgufBytes element;
  element.header(0, 1).key("k", 9).le<uint32_t>(99).le<uint64_t>(0);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadValueType, element), "is 99");
}

TEST(GgufErrors, NestingTooDeep) {
  GgufBytes ok, deep;
  ok.header(0, 1).key("k", 9);
  deep.header(0, 1).key("k", 9);
  for (unsigned i = 1; i < kGgufMaxArrayDepth; ++i) ok.le<uint32_t>(9).le<uint64_t>(1);
  ok.le<uint32_t>(0).le<uint64_t>(0);
  for (unsigned i = 1; i <= kGgufMaxArrayDepth; ++i) deep.le<uint32_t>(9).le<uint64_t>(1);
  deep.le<uint32_t>(0).le<uint64_t>(0);
  TempDir dir;
  EXPECT_NO_THROW(read_gguf(make_gguf(dir, ok)));
  expect_contains(expect_gguf_error(ErrorCode::GgufNestingTooDeep, deep), "9 deep");
}

TEST(GgufErrors, BadBool) {
  GgufBytes scalar;
  scalar.header(0, 1).key("flag", 7).le<uint8_t>(2);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadBool, scalar), "byte value 2");
  GgufBytes element;
  element.header(0, 1).key("flags", 9).le<uint32_t>(7).le<uint64_t>(2).le<uint8_t>(1).le<uint8_t>(255);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadBool, element), "element 1 of the value of 'flags'");
}

TEST(GgufErrors, EmptyKey) {
  GgufBytes b;
  b.header(0, 2).kv_u32("a", 1).kv_u32("", 2);
  expect_contains(expect_gguf_error(ErrorCode::GgufEmptyKey, b), "metadata key 1 is empty");
}

TEST(GgufErrors, DuplicateKey) {
  GgufBytes b;
  b.header(0, 2).kv_u32("general.alignment", 32).kv_str("general.alignment", "x");
  expect_contains(expect_gguf_error(ErrorCode::GgufDuplicateKey, b), "'general.alignment' appears twice");
}

TEST(GgufErrors, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 1u << 21}) {
    GgufBytes b;
    b.header(0, 1).kv_u32("general.alignment", a);
    expect_contains(expect_gguf_error(ErrorCode::GgufBadAlignment, b), fmt::format("general.alignment is {}", a));
  }
  GgufBytes wrong_type;
  wrong_type.header(0, 1).key("general.alignment", 10).le<uint64_t>(32);
  expect_contains(expect_gguf_error(ErrorCode::GgufBadAlignment, wrong_type), "UINT64, not a UINT32");
}

TEST(GgufErrors, NameTooLong) {
  GgufBytes ok, bad;
  ok.header(1, 0).tensor(std::string(63, 'n'), {1}, 0, 0).pad().le<float>(0);
  bad.header(1, 0).tensor(std::string(64, 'n'), {1}, 0, 0).pad().le<float>(0);
  TempDir dir;
  EXPECT_NO_THROW(read_gguf(make_gguf(dir, ok)));
  expect_contains(expect_gguf_error(ErrorCode::GgufNameTooLong, bad), "64 bytes long");
}

TEST(GgufErrors, DuplicateTensorName) {
  GgufBytes b;
  b.header(2, 0).tensor("w", {1}, 0, 0).tensor("w", {1}, 0, 32).pad().le<float>(0).pad().le<float>(0);
  expect_contains(expect_gguf_error(ErrorCode::DuplicateTensorName, b), "tensor 'w'");
}

TEST(GgufErrors, TooManyDims) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).pad().le<float>(0);
  expect_contains(expect_gguf_error(ErrorCode::GgufTooManyDims, b), "n_dims is 5");
}

TEST(GgufErrors, NegativeDim) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {4, 1ull << 63}, 0, 0).pad();
  expect_contains(expect_gguf_error(ErrorCode::GgufBadDim, b), "ne[1] is 9223372036854775808");
}

TEST(GgufErrors, Overflow) {
  GgufBytes elements;  // 2^32 * 2^32 elements
  elements.header(1, 0).tensor("t", {1ull << 32, 1ull << 32}, 0, 0).pad();
  expect_contains(expect_gguf_error(ErrorCode::ValidationOverflow, elements), "overflows int64");
  GgufBytes bytes;  // 2^62 F32 elements are 2^64 bytes
  bytes.header(1, 0).tensor("t", {1ull << 62}, 0, 0).pad();
  expect_contains(expect_gguf_error(ErrorCode::ValidationOverflow, bytes), "4611686018427387904 elements of F32");
  GgufBytes offset;  // the data range wraps around
  offset.header(1, 0).tensor("t", {1}, 0, ~uint64_t{31}).pad();
  expect_gguf_error(ErrorCode::ValidationOverflow, offset);
}

TEST(GgufErrors, BadTensorType) {
  for (uint32_t type : {4u, 31u, 43u, 1000u}) {
    GgufBytes b;
    b.header(1, 0).tensor("t", {32}, type, 0).pad();
    expect_contains(expect_gguf_error(ErrorCode::GgufBadTensorType, b), fmt::format("type {} is not", type));
  }
}

// read_gguf accepts every ggml type, and the catalogue lists a tensor of any type with its type
// name; only reading one of a type no decoder reads is refused, naming the type, file and tensor.
TEST(GgufErrors, UnsupportedTensorType) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {64}, 9, 0).pad().raw(std::string(72, '\0'));  // Q8_1: two blocks of 36 bytes
  TempDir dir;
  const std::string path = make_gguf(dir, b);
  const GgufFile f = read_gguf(path);
  EXPECT_EQ(f.tensors[0].nbytes, 72u);
  const Catalogue c = read_gguf_catalogue(path);
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].stored_type(), "Q8_1");
  EXPECT_EQ(c.tensors[0].nbytes, 72u);
  try {
    gguf_values<float>(c, "t", DType::F32);
    ADD_FAILURE() << "a Q8_1 tensor was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::GgufUnsupportedTensorType);
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.tensor(), "t");
    expect_contains(e.what(), "Q8_1 tensors cannot be decoded");
    expect_contains(e.what(), "IQ1_M");  // the message lists what is decoded
  }
}

// A truncated tensor of a type decoded since the first eight (Q3_K) is refused naming file and tensor.
TEST(GgufErrors, TruncatedTensorOfANewType) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {512}, 11, 0).pad().raw(std::string(110 + 50, '\0'));  // Q3_K: 2 blocks need 220 bytes
  const std::string message = expect_gguf_error(ErrorCode::GgufTensorOutOfBounds, b);
  expect_contains(message, "tensor 't'");
}

TEST(GgufErrors, RowNotBlockMultiple) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {33, 2}, 8, 0).pad().raw(std::string(100, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufRowNotBlockMultiple, b), "rows of 33 elements");
}

TEST(GgufErrors, MisalignedOffset) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {1}, 0, 4).pad().raw(std::string(8, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufMisalignedOffset, b), "offset 4 is not a multiple of the alignment 32");
}

TEST(GgufErrors, TensorOutOfBounds) {
  GgufBytes b;
  b.header(1, 0).tensor("t", {4}, 0, 0).pad().raw(std::string(15, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufTensorOutOfBounds, b), "16 bytes at offset 0");
}

TEST(GgufErrors, TensorOverlap) {
  GgufBytes b;
  b.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {1}, 0, 32).pad().raw(std::string(64, '\0'));
  expect_contains(expect_gguf_error(ErrorCode::GgufTensorOverlap, b), "overlap tensor 'a' at [0, 64)");
}

TEST(GgufErrors, MissingFile) {
  expect_error(ErrorCode::FileNotFound, [] { read_gguf("/nonexistent/model.gguf"); });
}

}  // namespace
}  // namespace wl::test
