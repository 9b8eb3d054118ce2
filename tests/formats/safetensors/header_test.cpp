// One hand-made bad file per rule of the safetensors header, plus what the validator must accept.
#include <tuple>

#include <fmt/format.h>

#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

// `"name":{"dtype":..,"shape":..,"data_offsets":[b,e]}` for building headers.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return fmt::format(R"("{}":{{"dtype":"{}","shape":{},"data_offsets":[{},{}]}})", name, dtype, shape, begin, end);
}

// Reads a hand-made file and expects `code`; returns the message.
std::string expect_file_error(ErrorCode code, const std::string& header, const std::string& data = {}) {
  TempDir dir;
  const std::string path = make_safetensors(dir, header, data);
  const std::string message = expect_error(code, [&] { read_safetensors_catalogue(path); });
  EXPECT_NE(message.find(path), std::string::npos) << "message should name the file: " << message;
  return message;
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
}

TEST(SafetensorsHeader, HeaderTooSmall) {
  TempDir dir;
  write_bytes(dir.file("short.safetensors"), std::string("\x02\0\0\0\0", 5));
  const std::string message =
      expect_error(ErrorCode::HeaderTooSmall, [&] { read_safetensors_catalogue(dir.file("short.safetensors")); });
  expect_contains(message, "5 bytes");
}

TEST(SafetensorsHeader, HeaderTooLarge) {
  TempDir dir;
  std::string bytes = safetensors_bytes("{}      ");
  const uint64_t n = kSafetensorsMaxHeaderBytes + 1;
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  write_bytes(dir.file("big.safetensors"), bytes);
  const std::string message =
      expect_error(ErrorCode::HeaderTooLarge, [&] { read_safetensors_catalogue(dir.file("big.safetensors")); });
  expect_contains(message, "100000001");
}

// Exactly the limit is allowed; then the length is only wrong because the file is short.
TEST(SafetensorsHeader, HeaderAtTheLimitIsOnlyCheckedAgainstTheFileSize) {
  std::string prefix(8, '\0');
  const uint64_t n = kSafetensorsMaxHeaderBytes;
  for (int i = 0; i < 8; ++i) prefix[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  const auto bytes = std::as_bytes(std::span(prefix.data(), prefix.size()));
  EXPECT_EQ(safetensors_header_length(bytes, 8 + n, "f"), n);
  expect_error(ErrorCode::InvalidHeaderLength, [&] { safetensors_header_length(bytes, 8 + n - 1, "f"); });
}

TEST(SafetensorsHeader, InvalidHeaderLength) {
  TempDir dir;
  std::string bytes = safetensors_bytes("{}      ");
  bytes[0] = 9;  // one byte more than the file holds
  write_bytes(dir.file("len.safetensors"), bytes);
  const std::string message =
      expect_error(ErrorCode::InvalidHeaderLength, [&] { read_safetensors_catalogue(dir.file("len.safetensors")); });
  expect_contains(message, "header length 9");
}

TEST(SafetensorsHeader, InvalidHeaderNotUtf8) {
  // An overlong '/', a UTF-16 surrogate, a code point above U+10FFFF, a truncated sequence.
  for (const std::string bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    const std::string header = R"({"__metadata__":{"k":")" + bad + R"("}})";
    const std::string message = expect_file_error(ErrorCode::InvalidHeader, header);
    expect_contains(message, "header offset 22");
  }
}

TEST(SafetensorsHeader, ValidUtf8IsAccepted) {
  TempDir dir;
  const std::string name = "w\xC3\xA9ight_\xE2\x82\xAC_\xF0\x9F\x98\x80";  // é, €, an emoji
  const Catalogue c = read_safetensors_catalogue(make_safetensors(dir, "{" + entry(name, "U8", "[1]", 0, 1) + "}", "x"));
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].name, name);
}

TEST(SafetensorsHeader, InvalidHeaderDeserializationNotJson) {
  const std::string message = expect_file_error(ErrorCode::InvalidHeaderDeserialization, R"({"a": )");
  expect_contains(message, "not JSON");
}

TEST(SafetensorsHeader, InvalidHeaderDeserializationWrongStructure) {
  const struct {
    std::string header;
    std::string says;
  } cases[] = {
      {R"({"t":{"shape":[1],"data_offsets":[0,4]}})", "missing field \"dtype\""},
      {R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", "missing field \"shape\""},
      {R"({"t":{"dtype":"F32","shape":[1]}})", "missing field \"data_offsets\""},
      {R"({"t":"F32"})", "not an object"},
      {R"({"t":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "dtype is 32, not a string"},
      {R"({"t":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "shape is 1, not an array"},
      {R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "shape[0] is -1"},
      {R"({"t":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", "shape[0] is 1.0"},
      {R"({"t":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})", "shape[0] is"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", "not an array [begin, end]"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "not an array [begin, end]"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})", "data_offsets[1] is \"4\""},
      {R"({"t":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "field \"dtype\" given twice"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.header);
    const std::string message = expect_file_error(ErrorCode::InvalidHeaderDeserialization, c.header, "abcd");
    expect_contains(message, c.says);
    expect_contains(message, "tensor 't'");
  }
}

// serde_json, the reference parser, refuses nesting deeper than 128; so do we (no deep recursion).
TEST(SafetensorsHeader, InvalidHeaderDeserializationTooDeep) {
  const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":)" +
                             std::string(200, '[') + std::string(200, ']') + "}}";
  const std::string message = expect_file_error(ErrorCode::InvalidHeaderDeserialization, header, "abcd");
  expect_contains(message, "deeper than 128");
}

TEST(SafetensorsHeader, InvalidHeaderStart) {
  for (const std::string header : {"[]", "42", "\"text\"", "null"}) {
    const std::string message = expect_file_error(ErrorCode::InvalidHeaderStart, header);
    expect_contains(message, "not an object");
  }
}

TEST(SafetensorsHeader, DuplicateTensorName) {
  // nlohmann keeps one of the two silently; the reader must not.
  const std::string header = "{" + entry("w", "F32", "[1]", 0, 4) + "," + entry("w", "F32", "[1]", 4, 8) + "}";
  const std::string message = expect_file_error(ErrorCode::DuplicateTensorName, header, std::string(8, '\0'));
  expect_contains(message, "tensor 'w'");
  // Identical entries are still two entries.
  const std::string same = "{" + entry("w", "F32", "[1]", 0, 4) + "," + entry("w", "F32", "[1]", 0, 4) + "}";
  expect_file_error(ErrorCode::DuplicateTensorName, same, std::string(4, '\0'));
}

TEST(SafetensorsHeader, TensorInvalidInfo) {
  const std::string message =
      expect_file_error(ErrorCode::TensorInvalidInfo, "{" + entry("t", "I32", "[2,2]", 0, 4) + "}", "abcd");
  expect_contains(message, "data_offsets [0, 4] span 4 bytes but I32 [2, 2] needs 16");
  expect_contains(message, "tensor 't'");
}

TEST(SafetensorsHeader, InvalidOffsetGapAtStart) {
  const std::string message =
      expect_file_error(ErrorCode::InvalidOffset, "{" + entry("t", "U8", "[4]", 4, 8) + "}", std::string(8, 'x'));
  expect_contains(message, "data_offsets [4, 8] leave a gap of 4 bytes");
}

TEST(SafetensorsHeader, InvalidOffsetGapBetweenTensors) {
  const std::string header = "{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 6, 10) + "}";
  const std::string message = expect_file_error(ErrorCode::InvalidOffset, header, std::string(10, 'x'));
  expect_contains(message, "tensor 'b'");
  expect_contains(message, "gap of 2 bytes after tensor 'a' (which ends at 4)");
}

TEST(SafetensorsHeader, InvalidOffsetOverlap) {
  const std::string header = "{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 2, 6) + "}";
  const std::string message = expect_file_error(ErrorCode::InvalidOffset, header, std::string(6, 'x'));
  expect_contains(message, "tensor 'b'");
  expect_contains(message, "overlap tensor 'a', which ends at 4");
}

TEST(SafetensorsHeader, InvalidOffsetEndBeforeBegin) {
  const std::string header = "{" + entry("a", "U8", "[0]", 0, 0) + "," + entry("b", "U8", "[4]", 4, 0) + "}";
  const std::string message = expect_file_error(ErrorCode::InvalidOffset, header, std::string(4, 'x'));
  expect_contains(message, "data_offsets [4, 0] end before they begin");
}

TEST(SafetensorsHeader, ValidationOverflowElementCount) {
  const std::string message = expect_file_error(
      ErrorCode::ValidationOverflow, "{" + entry("t", "U8", "[4294967296,4294967296]", 0, 4) + "}", "abcd");
  expect_contains(message, "[4294967296, 4294967296]");
}

// The reference counts bits, so 2^62 one-byte elements already overflow.
TEST(SafetensorsHeader, ValidationOverflowBits) {
  const std::string message = expect_file_error(
      ErrorCode::ValidationOverflow, "{" + entry("t", "U8", "[4611686018427387904]", 0, 4) + "}", "abcd");
  expect_contains(message, "4611686018427387904 elements of 8 bits");
}

TEST(SafetensorsHeader, MisalignedSlice) {
  // Three 4-bit elements are 12 bits: not a whole number of bytes.
  const std::string message =
      expect_file_error(ErrorCode::MisalignedSlice, "{" + entry("t", "F4", "[3]", 0, 2) + "}", "ab");
  expect_contains(message, "3 elements of 4 bits = 12 bits");
  expect_file_error(ErrorCode::MisalignedSlice, "{" + entry("t", "F6_E2M3", "[3]", 0, 3) + "}", "abc");
}

TEST(SafetensorsHeader, MetadataIncompleteBufferTrailing) {
  const std::string message =
      expect_file_error(ErrorCode::MetadataIncompleteBuffer, "{" + entry("t", "U8", "[4]", 0, 4) + "}", "abcdef");
  expect_contains(message, "cover 4 bytes of data but the file holds 6 after the header (2 trailing bytes)");
}

TEST(SafetensorsHeader, MetadataIncompleteBufferShort) {
  const std::string message =
      expect_file_error(ErrorCode::MetadataIncompleteBuffer, "{" + entry("t", "U8", "[4]", 0, 4) + "}", "ab");
  expect_contains(message, "2 bytes missing");
}

TEST(SafetensorsHeader, MetadataIncompleteBufferEmptyHeaderWithData) {
  expect_file_error(ErrorCode::MetadataIncompleteBuffer, "{}", "x");
}

TEST(SafetensorsHeader, InvalidMetadata) {
  const struct {
    std::string header;
    std::string says;
  } cases[] = {
      {R"({"__metadata__":{"epoch":3}})", "value of \"epoch\" is 3, not a string"},
      {R"({"__metadata__":["a"]})", "__metadata__ is [\"a\"], not an object of strings"},
      {R"({"__metadata__":"pt"})", "not an object of strings"},
      {R"({"__metadata__":{"a":"1","a":"2"}})", "key \"a\" given twice"},
      {R"({"__metadata__":{},"__metadata__":{}})", "__metadata__ given twice"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.header);
    expect_contains(expect_file_error(ErrorCode::InvalidMetadata, c.header), c.says);
  }
}

TEST(SafetensorsHeader, NullMetadataMeansNone) {
  TempDir dir;
  const Catalogue c = read_safetensors_catalogue(make_safetensors(dir, R"({"__metadata__":null})"));
  EXPECT_TRUE(c.metadata.empty());
  EXPECT_TRUE(c.tensors.empty());
}

TEST(SafetensorsHeader, UnsupportedDTypeKnownToSafetensors) {
  for (const auto& [dtype, shape, bytes] : std::vector<std::tuple<std::string, std::string, uint64_t>>{
           {"F8_E4M3FNUZ", "[2]", 2},
           {"F8_E5M2FNUZ", "[2]", 2},
           {"C64", "[1]", 8}}) {
    SCOPED_TRACE(dtype);
    const std::string message = expect_file_error(
        ErrorCode::UnsupportedDType, "{" + entry("t", dtype, shape, 0, bytes) + "}", std::string(bytes, '\0'));
    expect_contains(message, "dtype " + dtype + " is valid safetensors but weightloader does not support it");
    expect_contains(message, "tensor 't'");
  }
}

TEST(SafetensorsHeader, UnsupportedDTypeUnknownString) {
  for (const std::string dtype : {"F128", "f32", "float32", ""}) {
    const std::string message =
        expect_file_error(ErrorCode::UnsupportedDType, "{" + entry("t", dtype, "[1]", 0, 4) + "}", "abcd");
    expect_contains(message, "unknown dtype \"" + dtype + "\"");
  }
}

TEST(SafetensorsHeader, EveryWeightloaderDTypeIsAccepted) {
  TempDir dir;
  for (DType dtype : kAllDTypes) {
    const std::string name(dtype_name(dtype));
    SCOPED_TRACE(name);
    const uint64_t bytes = 3 * dtype_size(dtype);
    const Catalogue c = read_safetensors_catalogue(
        make_safetensors(dir, "{" + entry("t", name, "[3]", 0, bytes) + "}", std::string(bytes, '\0')));
    ASSERT_EQ(c.tensors.size(), 1u);
    EXPECT_EQ(c.tensors[0].dtype, dtype);
  }
}

// No I/O: the validator works on bytes, returns tensors sorted by offset with absolute offsets,
// and ignores fields it does not know (as the reference does).
TEST(SafetensorsHeader, ParseHeaderSortsByOffsetAndMakesOffsetsAbsolute) {
  const std::string header = "\t\n {" + entry("z_first", "F32", "[2]", 0, 8) + "," + entry("a_last", "F16", "[]", 12, 14) +
                             "," + entry("m_mid", "I32", "[1]", 8, 12) + "," +
                             R"("empty":{"dtype":"F64","shape":[0,3],"data_offsets":[14,14],"note":{"k":[1]}})" +
                             ",\"__metadata__\":{\"format\":\"pt\"}}  \r\n";
  const Catalogue c = parse_safetensors_header(header, 8 + header.size(), 8 + header.size() + 14, "mem.safetensors");
  ASSERT_EQ(c.tensors.size(), 4u);
  EXPECT_EQ(c.tensors[0].name, "z_first");
  EXPECT_EQ(c.tensors[1].name, "m_mid");
  EXPECT_EQ(c.tensors[2].name, "a_last");
  EXPECT_EQ(c.tensors[3].name, "empty");
  EXPECT_EQ(c.tensors[2].shape, Shape{});
  EXPECT_EQ(c.tensors[2].numel(), 1u);
  EXPECT_EQ(c.tensors[3].shape, (Shape{0, 3}));
  const uint64_t data_start = 8 + header.size();
  EXPECT_EQ(c.tensors[0].offset, data_start);
  EXPECT_EQ(c.tensors[1].offset, data_start + 8);
  EXPECT_EQ(c.tensors[2].offset, data_start + 12);
  EXPECT_EQ(c.tensors[2].nbytes, 2u);
  EXPECT_EQ(c.tensors[3].offset, data_start + 14);
  EXPECT_EQ(c.tensors[3].nbytes, 0u);
  for (const TensorInfo& t : c.tensors) EXPECT_EQ(c.file_of(t), "mem.safetensors");
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST(SafetensorsHeader, ZeroSizeTensorsMaySitAnywhereInTheSequence) {
  const std::string header = "{" + entry("a", "U8", "[2]", 0, 2) + "," + entry("b", "U8", "[0]", 2, 2) + "," +
                             entry("c", "U8", "[0]", 0, 0) + "," + entry("d", "U8", "[1]", 2, 3) + "}";
  const Catalogue c = parse_safetensors_header(header, 8 + header.size(), 8 + header.size() + 3, "f");
  ASSERT_EQ(c.tensors.size(), 4u);
  EXPECT_EQ(c.tensors[0].name, "c");
  EXPECT_EQ(c.tensors[1].name, "a");
  EXPECT_EQ(c.tensors[2].name, "b");
  EXPECT_EQ(c.tensors[3].name, "d");
}

TEST(SafetensorsHeader, RankZeroTensor) {
  TempDir dir;
  const Catalogue c =
      read_safetensors_catalogue(make_safetensors(dir, "{" + entry("s", "F32", "[]", 0, 4) + "}", std::string("\0\0\x80\x3f", 4)));
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_TRUE(c.tensors[0].shape.empty());
  EXPECT_EQ(tensor_values<float>(c, "s"), std::vector<float>{1.0f});
}

TEST(SafetensorsHeader, SniffNeedsABraceAfterWhitespace) {
  const auto sniff = [](const std::string& bytes) {
    return safetensors_format().sniff(std::as_bytes(std::span(bytes.data(), bytes.size())), bytes.size());
  };
  EXPECT_TRUE(sniff(safetensors_bytes("{}")));
  EXPECT_TRUE(sniff(safetensors_bytes(" \t\r\n{}")));
  EXPECT_FALSE(sniff(safetensors_bytes("[]")));
  EXPECT_FALSE(sniff(safetensors_bytes("    ")));
  EXPECT_FALSE(sniff(safetensors_bytes("")));
  EXPECT_FALSE(sniff(std::string("\x02\0\0\0", 4)));
  std::string too_long = safetensors_bytes("{}");
  too_long[0] = 3;
  EXPECT_FALSE(sniff(too_long));
  EXPECT_EQ(safetensors_format().name, "safetensors");
}

}  // namespace
}  // namespace wl::test
