// safetensors' sub-byte floats F4 (E2M1), F6_E2M3 and F6_E3M2: every code decoded to F32, BF16 and F16
// as the OCP MX rules give it (computed here by a formula of its own, not the library's tables;
// tests/python/test_subbyte_floats.py compares with ml_dtypes and torch), the packing order
// (F4 low nibble first; F6 a least-significant-bit-first stream, 4 codes in 3 bytes), the catalogue
// entry, slices on whole blocks, a catalogue value, and shapes that do not fill whole bytes refused.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "formats/safetensors/st_test_util.hpp"
#include "loaders/catalogue_value.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {
namespace {

struct Type {
  std::string name;
  int exp_bits, man_bits;
  unsigned bits() const { return static_cast<unsigned>(1 + exp_bits + man_bits); }
};
const Type kTypes[] = {{"F4", 2, 1}, {"F6_E2M3", 2, 3}, {"F6_E3M2", 3, 2}};

// The OCP MX value of a code: (-1)^s · 2^(e - bias) · 1.m, or 2^(1 - bias) · 0.m when e is 0; no
// infinities or NaN.
double ocp_value(const Type& t, uint32_t code) {
  const int bias = (1 << (t.exp_bits - 1)) - 1;
  const uint32_t m = code & ((1u << t.man_bits) - 1), e = (code >> t.man_bits) & ((1u << t.exp_bits) - 1);
  const double frac = static_cast<double>(m) / (1 << t.man_bits);
  const double mag = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, static_cast<int>(e) - bias);
  return (code >> (t.bits() - 1)) ? -mag : mag;
}

// Codes packed as a little-endian bit stream: code i at bits [i·bits, (i+1)·bits).
std::string pack(const std::vector<uint32_t>& codes, unsigned bits) {
  std::string out(codes.size() * bits / 8, '\0');
  for (size_t i = 0; i < codes.size(); ++i)
    for (unsigned b = 0; b < bits; ++b)
      if ((codes[i] >> b) & 1) {
        const size_t at = i * bits + b;
        out[at / 8] = static_cast<char>(static_cast<uint8_t>(out[at / 8]) | (1u << (at % 8)));
      }
  return out;
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) +
         "," + std::to_string(end) + "]}";
}

// Every code of `t` twice (in every position of a block), as a [rows, cols] tensor of one file.
struct AllCodes {
  std::vector<uint32_t> codes;
  std::unique_ptr<WeightSource> source;
};

AllCodes all_codes(const TempDir& dir, const Type& t) {
  AllCodes a;
  const uint32_t n = 1u << t.bits();
  for (uint32_t c = 0; c < n; ++c) a.codes.push_back(c);
  for (uint32_t c = 0; c < n; ++c) a.codes.push_back((c * 7 + 3) % n);  // shifted through the block positions
  const std::string data = pack(a.codes, t.bits());
  const std::string shape = "[" + std::to_string(a.codes.size() / 8) + ",8]";
  const std::string path = make_safetensors(dir, "{" + entry("codes", t.name, shape, 0, data.size()) + "}", data);
  a.source = WeightLoaderRegistry::with_builtins()->create("local", {})->get_weights(path);
  return a;
}

TEST(SafetensorsSubByteFloats, CatalogueShowsTheStoredTypeAndDecodesToF32) {
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    TempDir dir;
    const AllCodes a = all_codes(dir, t);
    const TensorInfo& info = a.source->at("codes");
    EXPECT_EQ(info.stored_type(), t.name);
    EXPECT_EQ(info.dtype, DType::F32);
    EXPECT_EQ(info.shape, (Shape{a.codes.size() / 8, 8}));
    EXPECT_EQ(info.nbytes, a.codes.size() * t.bits() / 8);
    ASSERT_TRUE(info.decoder);
    EXPECT_EQ(info.decoder->block_elems(), t.bits() == 4 ? 2u : 4u);
    EXPECT_EQ(info.decoder->block_bytes(), t.bits() == 4 ? 1u : 3u);
  }
}

TEST(SafetensorsSubByteFloats, EveryCodeInF32Bf16AndF16) {
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    TempDir dir;
    const AllCodes a = all_codes(dir, t);
    const TensorInfo& info = a.source->at("codes");
    const TensorView f32 = a.source->load(info, DType::F32);
    const TensorView bf16 = a.source->load(info, DType::BF16);
    const TensorView f16 = a.source->load(info, DType::F16);
    for (size_t i = 0; i < a.codes.size(); ++i) {
      const float want = static_cast<float>(ocp_value(t, a.codes[i]));
      SCOPED_TRACE(::testing::Message() << "code " << a.codes[i] << " = " << want);
      EXPECT_EQ(std::bit_cast<uint32_t>(f32.data<float>()[i]), std::bit_cast<uint32_t>(want));  // -0 too
      EXPECT_EQ(bf16.data<uint16_t>()[i], static_cast<uint16_t>(std::bit_cast<uint32_t>(want) >> 16));  // exact in BF16
      EXPECT_EQ(std::bit_cast<uint32_t>(f16_bits_to_f32(f16.data<uint16_t>()[i])), std::bit_cast<uint32_t>(want));
    }
  }
}

// The packing, spelled out on bytes: F4's element 0 is the low nibble; F6's four codes in three
// bytes are b0 = e0 | e1 << 6, b1 = e1 >> 2 | e2 << 4, b2 = e2 >> 4 | e3 << 2.
TEST(SafetensorsSubByteFloats, BitOrder) {
  TempDir dir;
  // F4: 0x71 = 0.5 (code 1), then 6 (code 7); 0xA0 = 0 (code 0), then -1 (code 0xA).
  std::string path = make_safetensors(dir, "{" + entry("f4", "F4", "[4]", 0, 2) + "}", "\x71\xA0", "f4.safetensors");
  auto s = WeightLoaderRegistry::with_builtins()->create("local", {})->get_weights(path);
  const TensorView f4 = s->load(s->at("f4"), DType::F32);
  EXPECT_EQ(std::vector<float>(f4.data<float>(), f4.data<float>() + 4), (std::vector<float>{0.5f, 6.0f, 0.0f, -1.0f}));
  // F6_E2M3 codes 0x01 (0.125), 0x0F (1.875), 0x3F (-7.5), 0x08 (1.0).
  const uint32_t e0 = 0x01, e1 = 0x0F, e2 = 0x3F, e3 = 0x08;
  const std::string bytes{static_cast<char>((e0 | e1 << 6) & 0xFF), static_cast<char>((e1 >> 2 | e2 << 4) & 0xFF),
                          static_cast<char>((e2 >> 4 | e3 << 2) & 0xFF)};
  path = make_safetensors(dir, "{" + entry("f6", "F6_E2M3", "[4]", 0, 3) + "}", bytes, "f6.safetensors");
  s = WeightLoaderRegistry::with_builtins()->create("local", {})->get_weights(path);
  const TensorView f6 = s->load(s->at("f6"), DType::F32);
  EXPECT_EQ(std::vector<float>(f6.data<float>(), f6.data<float>() + 4), (std::vector<float>{0.125f, 1.875f, -7.5f, 1.0f}));
}

TEST(SafetensorsSubByteFloats, SlicesOnWholeBlocks) {
  TempDir dir;
  const Type& t = kTypes[2];  // F6_E3M2: rows of 8 codes are 2 blocks
  const AllCodes a = all_codes(dir, t);
  const TensorInfo& info = a.source->at("codes");
  std::vector<float> rows(3 * 8);
  a.source->read(info, DType::F32, rows.data(), Slice{0, 5, 8});
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], static_cast<float>(ocp_value(t, a.codes[5 * 8 + i]))) << i;
  std::vector<float> cols(a.codes.size() / 8 * 4);
  a.source->read(info, DType::F32, cols.data(), Slice{1, 4, 8});
  EXPECT_EQ(cols[1], static_cast<float>(ocp_value(t, a.codes[5])));       // row 0, column 5
  EXPECT_EQ(cols[4 + 1], static_cast<float>(ocp_value(t, a.codes[8 + 5])));  // row 1, column 5
  const std::string m =
      expect_error(ErrorCode::SliceOutOfBounds, [&] { a.source->read(info, DType::F32, cols.data(), Slice{1, 2, 6}); });
  EXPECT_NE(m.find("4-element block"), std::string::npos) << m;
}

TEST(SafetensorsSubByteFloats, ComeBackFromACatalogueValue) {
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    TempDir dir;
    const AllCodes a = all_codes(dir, t);
    const std::optional<std::string> value = catalogue_value(*a.source);
    ASSERT_TRUE(value.has_value());
    auto b = catalogue_from_value(*value, local_opener());
    EXPECT_EQ(b->at("codes").stored_type(), t.name);
    const TensorView x = a.source->load(a.source->at("codes"), DType::F32), y = b->load(b->at("codes"), DType::F32);
    ASSERT_EQ(x.nbytes(), y.nbytes());
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0);
  }
}

// Element counts that leave a byte partly filled: refused with the file, the tensor and the rule.
TEST(SafetensorsSubByteFloats, ShapesThatDoNotFillWholeBytesAreRefused) {
  for (const auto& [dtype, shape, bytes] : std::vector<std::tuple<std::string, std::string, uint64_t>>{
           {"F4", "[3]", 2}, {"F4", "[]", 1}, {"F4", "[3,3]", 5}, {"F6_E2M3", "[2]", 2}, {"F6_E3M2", "[2,3]", 5}}) {
    SCOPED_TRACE(dtype + " " + shape);
    TempDir dir;
    const std::string path = make_safetensors(dir, "{" + entry("w", dtype, shape, 0, bytes) + "}", std::string(bytes, '\0'));
    const std::string m = expect_error(ErrorCode::MisalignedSlice, [&] { read_safetensors_catalogue(path); });
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("tensor 'w'"), std::string::npos) << m;
    EXPECT_NE(m.find("not a whole number of bytes"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace wl::test
