// Each quantised type: blocks packed by hand from chosen quants and scales, read through a GGUF
// file and the WeightSource, compared with the values the block layout defines. The expected
// values are computed here from the chosen numbers, never by the library's decoders. Scales are
// powers of two, so every product is exact whatever the order of operations.
#include <random>

#include "formats/gguf/gguf_test_util.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::test {
namespace {

void put_f16(std::string& out, float v) {
  const uint16_t bits = f32_to_f16_bits(v);
  out.append(reinterpret_cast<const char*>(&bits), 2);
}

// Reads a one-tensor file whose data are `blocks`, shaped [rows, elems / rows] (PyTorch order).
std::vector<float> decode(GgmlType type, const std::string& blocks, uint64_t elems, uint64_t rows) {
  TempDir dir;
  GgufBytes b;
  b.header(1, 0).tensor("t", {elems / rows, rows}, static_cast<uint32_t>(type), 0).pad().raw(blocks);
  const Catalogue c = read_gguf_catalogue(make_gguf(dir, b));
  EXPECT_EQ(c.tensors.at(0).stored_type(), ggml_type_name(type));
  EXPECT_EQ(c.tensors.at(0).nbytes, blocks.size());
  return gguf_values<float>(c, "t", DType::F32);
}

std::vector<int> random_ints(std::mt19937& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(rng);
  return v;
}

TEST(GgufQuants, Q4_0) {
  std::mt19937 rng(1);
  std::string blocks;
  std::vector<float> expected;
  const float scales[2] = {0.5f, -2.0f};
  for (float d : scales) {
    const std::vector<int> q = random_ints(rng, 32, 0, 15);
    put_f16(blocks, d);
    for (int j = 0; j < 16; ++j) blocks.push_back(static_cast<char>(q[j] | (q[j + 16] << 4)));
    for (int e = 0; e < 32; ++e) expected.push_back(static_cast<float>(q[e] - 8) * d);
  }
  EXPECT_EQ(decode(GgmlType::Q4_0, blocks, 64, 2), expected);
}

TEST(GgufQuants, Q4_1) {
  std::mt19937 rng(2);
  std::string blocks;
  std::vector<float> expected;
  for (const auto& [d, m] : {std::pair{0.25f, -1.0f}, std::pair{4.0f, 0.5f}}) {
    const std::vector<int> q = random_ints(rng, 32, 0, 15);
    put_f16(blocks, d);
    put_f16(blocks, m);
    for (int j = 0; j < 16; ++j) blocks.push_back(static_cast<char>(q[j] | (q[j + 16] << 4)));
    for (int e = 0; e < 32; ++e) expected.push_back(static_cast<float>(q[e]) * d + m);
  }
  EXPECT_EQ(decode(GgmlType::Q4_1, blocks, 64, 1), expected);
}

// The 32-bit word of fifth bits: bit e is bit 4 of quant e.
void put_qh(std::string& out, const std::vector<int>& q) {
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) qh |= static_cast<uint32_t>((q[e] >> 4) & 1) << e;
  out.append(reinterpret_cast<const char*>(&qh), 4);
}

TEST(GgufQuants, Q5_0) {
  std::mt19937 rng(3);
  std::string blocks;
  std::vector<float> expected;
  for (float d : {0.125f, 8.0f}) {
    const std::vector<int> q = random_ints(rng, 32, 0, 31);
    put_f16(blocks, d);
    put_qh(blocks, q);
    for (int j = 0; j < 16; ++j) blocks.push_back(static_cast<char>((q[j] & 15) | ((q[j + 16] & 15) << 4)));
    for (int e = 0; e < 32; ++e) expected.push_back(static_cast<float>(q[e] - 16) * d);
  }
  EXPECT_EQ(decode(GgmlType::Q5_0, blocks, 64, 2), expected);
}

TEST(GgufQuants, Q5_1) {
  std::mt19937 rng(4);
  std::string blocks;
  std::vector<float> expected;
  for (const auto& [d, m] : {std::pair{0.5f, 2.0f}, std::pair{1.0f, -16.0f}}) {
    const std::vector<int> q = random_ints(rng, 32, 0, 31);
    put_f16(blocks, d);
    put_f16(blocks, m);
    put_qh(blocks, q);
    for (int j = 0; j < 16; ++j) blocks.push_back(static_cast<char>((q[j] & 15) | ((q[j + 16] & 15) << 4)));
    for (int e = 0; e < 32; ++e) expected.push_back(static_cast<float>(q[e]) * d + m);
  }
  EXPECT_EQ(decode(GgmlType::Q5_1, blocks, 64, 1), expected);
}

TEST(GgufQuants, Q8_0) {
  std::mt19937 rng(5);
  std::string blocks;
  std::vector<float> expected;
  for (float d : {0.0625f, -0.5f, 0.0f}) {
    const std::vector<int> q = random_ints(rng, 32, -128, 127);
    put_f16(blocks, d);
    for (int e = 0; e < 32; ++e) blocks.push_back(static_cast<char>(static_cast<int8_t>(q[e])));
    for (int e = 0; e < 32; ++e) expected.push_back(static_cast<float>(q[e]) * d);
  }
  EXPECT_EQ(decode(GgmlType::Q8_0, blocks, 96, 3), expected);
}

// The 12 scale bytes of Q4_K / Q5_K for eight 6-bit scales and mins: bytes 0-3 hold scales 0-3
// in their low 6 bits and the top 2 bits of scales 4-7; bytes 4-7 the same for the mins; bytes
// 8-11 the low 4 bits of scale 4-7 (low nibble) and min 4-7 (high nibble).
void put_k4_scales(std::string& out, const std::vector<int>& sc, const std::vector<int>& mn) {
  uint8_t b[12] = {};
  for (int s = 0; s < 4; ++s) {
    b[s] = static_cast<uint8_t>(sc[s] | ((sc[s + 4] >> 4) << 6));
    b[s + 4] = static_cast<uint8_t>(mn[s] | ((mn[s + 4] >> 4) << 6));
    b[s + 8] = static_cast<uint8_t>((sc[s + 4] & 15) | ((mn[s + 4] & 15) << 4));
  }
  out.append(reinterpret_cast<const char*>(b), 12);
}

// Q4_K / Q5_K: element e is in group g = e / 64, sub-block 2g + (e % 64) / 32; its value is
// d * scale * q - dmin * min. 4-bit parts: byte 32g + l holds elements 64g + l (low nibble) and
// 64g + 32 + l (high nibble); Q5_K's fifth bits: bit 2g (+1 for the upper half) of qh[l].
std::vector<float> k_quant(GgmlType type, std::mt19937& rng, std::string& blocks) {
  const int top = type == GgmlType::Q5_K ? 31 : 15;
  const float d = 0.25f, dmin = 0.125f;
  const std::vector<int> sc = random_ints(rng, 8, 0, 63), mn = random_ints(rng, 8, 0, 63);
  const std::vector<int> q = random_ints(rng, 256, 0, top);
  put_f16(blocks, d);
  put_f16(blocks, dmin);
  put_k4_scales(blocks, sc, mn);
  if (type == GgmlType::Q5_K) {
    uint8_t qh[32] = {};
    for (int e = 0; e < 256; ++e) {
      const int g = e / 64, upper = (e % 64) / 32, l = e % 32;
      qh[l] |= static_cast<uint8_t>(((q[e] >> 4) & 1) << (2 * g + upper));
    }
    blocks.append(reinterpret_cast<const char*>(qh), 32);
  }
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l)
      blocks.push_back(static_cast<char>((q[64 * g + l] & 15) | ((q[64 * g + 32 + l] & 15) << 4)));
  std::vector<float> expected;
  for (int e = 0; e < 256; ++e) {
    const int s = 2 * (e / 64) + (e % 64) / 32;
    expected.push_back(d * static_cast<float>(sc[s] * q[e]) - dmin * static_cast<float>(mn[s]));
  }
  return expected;
}

TEST(GgufQuants, Q4_K) {
  std::mt19937 rng(6);
  std::string blocks;
  std::vector<float> expected = k_quant(GgmlType::Q4_K, rng, blocks);
  const std::vector<float> second = k_quant(GgmlType::Q4_K, rng, blocks);
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(decode(GgmlType::Q4_K, blocks, 512, 2), expected);
}

TEST(GgufQuants, Q5_K) {
  std::mt19937 rng(7);
  std::string blocks;
  std::vector<float> expected = k_quant(GgmlType::Q5_K, rng, blocks);
  const std::vector<float> second = k_quant(GgmlType::Q5_K, rng, blocks);
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(decode(GgmlType::Q5_K, blocks, 512, 1), expected);
}

// Q6_K: ql[128], qh[64], 16 int8 scales, f16 d. Element e: half h = e / 128, p = e % 128,
// k = p / 32, l = p % 32. Low 4 bits: nibble k / 2 of ql[64h + l + 32 (k % 2)]; high 2 bits:
// bits 2k, 2k+1 of qh[32h + l]; scale 8h + l / 16 + 2k; value d * scale * (q - 32).
TEST(GgufQuants, Q6_K) {
  std::mt19937 rng(8);
  std::string blocks;
  std::vector<float> expected;
  for (float d : {0.5f, -0.25f}) {
    const std::vector<int> q = random_ints(rng, 256, 0, 63), sc = random_ints(rng, 16, -128, 127);
    uint8_t ql[128] = {}, qh[64] = {};
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, p = e % 128, k = p / 32, l = p % 32;
      ql[64 * h + l + 32 * (k % 2)] |= static_cast<uint8_t>((q[e] & 15) << (4 * (k / 2)));
      qh[32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * k));
      expected.push_back(d * static_cast<float>(sc[8 * h + l / 16 + 2 * k] * (q[e] - 32)));
    }
    blocks.append(reinterpret_cast<const char*>(ql), 128);
    blocks.append(reinterpret_cast<const char*>(qh), 64);
    for (int s : sc) blocks.push_back(static_cast<char>(static_cast<int8_t>(s)));
    put_f16(blocks, d);
  }
  EXPECT_EQ(decode(GgmlType::Q6_K, blocks, 512, 2), expected);
}

// A non-power-of-two scale: ggml multiplies the float quant by the float scale, once.
TEST(GgufQuants, Q8_0WithAnInexactScale) {
  std::string block;
  put_f16(block, 0.1f);
  for (int e = 0; e < 32; ++e) block.push_back(static_cast<char>(e - 16));
  const float d = f16_bits_to_f32(f32_to_f16_bits(0.1f));
  const std::vector<float> got = decode(GgmlType::Q8_0, block, 32, 1);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(got[static_cast<size_t>(e)], static_cast<float>(e - 16) * d) << e;
}

// Decoded values convert on to other dtypes, and whole-block slices of rows can be read.
TEST(GgufQuants, SlicesAndConversionOfDecodedTensors) {
  std::string blocks;
  for (int r = 0; r < 4; ++r) {
    put_f16(blocks, 1.0f);
    for (int e = 0; e < 32; ++e) blocks.push_back(static_cast<char>(r * 32 + e - 64));
  }
  TempDir dir;
  GgufBytes b;
  b.header(1, 0).tensor("t", {32, 4}, 8, 0).pad().raw(blocks);
  const Catalogue c = read_gguf_catalogue(make_gguf(dir, b));
  const WeightSource source("gguf", "test", c);
  std::vector<uint16_t> rows(64);
  source.read(source.at("t"), DType::BF16, rows.data(), Slice{0, 1, 3});
  for (int i = 0; i < 64; ++i) EXPECT_EQ(bf16_bits_to_f32(rows[static_cast<size_t>(i)]), i - 32) << i;
}

}  // namespace
}  // namespace wl::test
