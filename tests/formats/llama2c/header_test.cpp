// One hand-made bad file per rule the llama2.c reader enforces, and sniffing that never throws.
#include <random>

#include "formats/llama2c/l2c_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"

namespace wl::test {
namespace {

const Fields kTiny = {16, 24, 2, 4, 2, 10, 6};

// A v0 file: the header, then `floats` zero floats.
std::string v0_file(const Fields& f, uint64_t floats) { return v0_header(f) + std::string(4 * floats, '\0'); }

std::string error_of(ErrorCode code, const std::string& bytes) {
  TempDir dir;
  const std::string path = dir.file("model.bin");
  write_bytes(path, bytes);
  const std::string message = expect_error(code, [&] { read_llama2c_catalogue(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  return message;
}

bool sniffs(const std::string& bytes) {
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  return llama2c_format().sniff(std::span(p, std::min<size_t>(bytes.size(), 4096)), bytes.size());
}

TEST(Llama2cHeader, GoodHandMadeFilesOfEveryVersion) {
  TempDir dir;
  struct Case {
    std::string bytes;
    int version;
    bool shared;
  };
  Fields unshared = kTiny;
  unshared[5] = -10;
  const std::vector<Case> cases = {
      {v0_file(kTiny, f32_body_floats(kTiny, true, true)), 0, true},
      {v0_file(unshared, f32_body_floats(unshared, false, true)), 0, false},
      {magic_header(1, kTiny, 1) + std::string(4 * f32_body_floats(kTiny, true, false), '\0'), 1, true},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file("m.bin");
    write_bytes(path, c.bytes);
    const Llama2cHeader h = read_llama2c_header(path);
    EXPECT_EQ(h.version, c.version);
    EXPECT_EQ(h.shared_classifier, c.shared);
    EXPECT_EQ(h.vocab_size, 10u);
    EXPECT_EQ(h.kv_dim(), 8u);
    EXPECT_TRUE(sniffs(c.bytes));
  }
}

TEST(Llama2cHeader, TruncatedHeader) {
  EXPECT_NE(error_of(ErrorCode::Llama2cHeaderTruncated, v0_header(kTiny).substr(0, 20)).find("20 bytes"),
            std::string::npos);
  error_of(ErrorCode::Llama2cHeaderTruncated, "");
  error_of(ErrorCode::Llama2cHeaderTruncated, magic_header(1, kTiny, 1).substr(0, 100));
}

TEST(Llama2cHeader, UnsupportedVersion) {
  std::string bytes = magic_header(1, kTiny, 1);
  bytes[4] = 3;
  EXPECT_NE(error_of(ErrorCode::Llama2cUnsupportedVersion, bytes).find("version 3"), std::string::npos);
  bytes[4] = 0;
  error_of(ErrorCode::Llama2cUnsupportedVersion, bytes);
}

TEST(Llama2cHeader, NegativeZeroAndHugeFields) {
  for (size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    Fields f = kTiny;
    f[i] = 0;
    error_of(ErrorCode::Llama2cInvalidField, v0_file(f, 1000));
    if (i != 5) {  // v0's vocab_size may be negative
      f[i] = -4;
      EXPECT_NE(error_of(ErrorCode::Llama2cInvalidField, v0_file(f, 1000)).find("-4"), std::string::npos);
    }
    f = kTiny;
    f[i] = i == 5 ? INT32_MIN : INT32_MAX;
    error_of(ErrorCode::Llama2cInvalidField, v0_file(f, 1000));
  }
  Fields negative_vocab = kTiny;
  negative_vocab[5] = -10;  // v1/v2 carry a flag instead
  error_of(ErrorCode::Llama2cInvalidField, magic_header(1, negative_vocab, 0));
  error_of(ErrorCode::Llama2cInvalidField, magic_header(1, kTiny, 2));  // flag neither 0 nor 1
  Fields wide = kTiny;
  wide[0] = (1 << 16) + 4;
  wide[3] = 4;
  EXPECT_NE(error_of(ErrorCode::Llama2cInvalidField, v0_file(wide, 1000)).find("dim is 65540"), std::string::npos);
}

TEST(Llama2cHeader, InconsistentHeads) {
  Fields f = kTiny;
  f[3] = 6;  // 16 % 6
  EXPECT_NE(error_of(ErrorCode::Llama2cInconsistentHeads, v0_file(f, 1000)).find("n_heads 6"), std::string::npos);
  f = kTiny;
  f[4] = 3;  // 4 % 3
  error_of(ErrorCode::Llama2cInconsistentHeads, v0_file(f, 1000));
  f = kTiny;
  f[4] = 8;  // more kv heads than heads
  error_of(ErrorCode::Llama2cInconsistentHeads, v0_file(f, 1000));
  f = kTiny;
  f[3] = 16, f[4] = 16;  // head size 1
  EXPECT_NE(error_of(ErrorCode::Llama2cInconsistentHeads, v0_file(f, 1000)).find("odd"), std::string::npos);
}

TEST(Llama2cHeader, GroupSize) {
  for (int32_t bad : {0, -8, 5, 32}) {
    SCOPED_TRACE(bad);
    error_of(ErrorCode::Llama2cInvalidGroupSize, magic_header(2, kTiny, 1, bad) + std::string(10000, '\0'));
  }
}

TEST(Llama2cHeader, SizeMismatch) {
  const uint64_t shared = f32_body_floats(kTiny, true, true);
  const uint64_t expected = 28 + 4 * shared;
  const std::string short_by_one = v0_file(kTiny, shared).substr(0, expected - 1);
  const std::string message = error_of(ErrorCode::Llama2cSizeMismatch, short_by_one);
  EXPECT_NE(message.find(std::to_string(expected - 1) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("implies " + std::to_string(expected) + " bytes"), std::string::npos) << message;
  error_of(ErrorCode::Llama2cSizeMismatch, v0_file(kTiny, shared + 1));

  // A shared-classifier header on a file that has the classifier: the hint names the sign.
  const std::string with_wcls = v0_file(kTiny, f32_body_floats(kTiny, false, true));
  EXPECT_NE(error_of(ErrorCode::Llama2cSizeMismatch, with_wcls).find("sign of vocab_size"), std::string::npos);
  Fields unshared = kTiny;
  unshared[5] = -10;
  error_of(ErrorCode::Llama2cSizeMismatch, v0_file(unshared, shared));

  const std::string v1 = magic_header(1, kTiny, 0) + std::string(4 * f32_body_floats(kTiny, false, false), '\0');
  error_of(ErrorCode::Llama2cSizeMismatch, v1 + "x");
  EXPECT_NE(error_of(ErrorCode::Llama2cSizeMismatch, v1.substr(0, v1.size() - 4 * 160)).find("flag"),
            std::string::npos);
}

TEST(Llama2cHeader, SniffingNeverThrows) {
  EXPECT_FALSE(sniffs(""));
  EXPECT_FALSE(sniffs("ak4"));
  EXPECT_FALSE(sniffs(v0_header(kTiny)));                                         // size does not match
  EXPECT_FALSE(sniffs(v0_file(kTiny, f32_body_floats(kTiny, true, true) + 1)));  // one float too many
  EXPECT_TRUE(sniffs(v0_file(kTiny, f32_body_floats(kTiny, true, true))));
  EXPECT_TRUE(sniffs(magic_header(2, kTiny, 1, 8)));  // the magic alone: the reader explains what is wrong
  EXPECT_TRUE(sniffs(magic_header(7, kTiny, 1)));
  std::string garbage(4096, '\0');
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    for (char& c : garbage) c = static_cast<char>(rng());
    EXPECT_FALSE(sniffs(garbage));
  }
  Fields f = kTiny;
  f[3] = -1;
  EXPECT_FALSE(sniffs(v0_file(f, 1000)));
}

TEST(Llama2cHeader, OtherFormatsAreNotTakenForLlama2c) {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  write_bytes(path, std::string("\x02\0\0\0\0\0\0\0{}", 10));
  const FileFormat* f = detect_file_format(path);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name, "safetensors");
  EXPECT_NE(find_file_format("llama2c"), nullptr);
}

TEST(Llama2cHeader, TheTokenizerNextToStories260KIsNotACheckpoint) {
  WL_REQUIRE_TESTDATA();
  const FileFormat* f = detect_file_format((testdata_dir() / "llama2c-stories260K" / "tok512.bin").string());
  EXPECT_EQ(f, nullptr) << f->name;
}

}  // namespace
}  // namespace wl::test
