// The ggml types beyond the first eight: for each, blocks packed here by hand from chosen codes and
// scales as ggml-common.h lays the block out, decoded by the registered decoder (and the scalar
// reference), compared with the values the format defines, computed here from the chosen numbers.
// Scales are powers of two (or small integers times them) so every product is exact whatever the
// order of operations; the order itself is checked bit for bit against gguf-py by
// tests/python/test_peer_gguf_types.py. The few grid entries used are quoted from ggml-common.h
// (packed, element j in byte j), not read from our generated table.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::gguf {
namespace {

using Bytes = std::vector<uint8_t>;

void put_f16(Bytes& out, float v) {
  const uint16_t bits = f32_to_f16_bits(v);
  ASSERT_EQ(f16_bits_to_f32(bits), v);  // exact: the expectations below use v itself
  out.push_back(static_cast<uint8_t>(bits));
  out.push_back(static_cast<uint8_t>(bits >> 8));
}

template <class T>
void put(Bytes& out, T v) {
  uint8_t b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.insert(out.end(), b, b + sizeof v);
}

std::vector<int> random_ints(std::mt19937& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(rng);
  return v;
}

// The registered decoder's values for `blocks`; the scalar reference must agree bit for bit.
std::vector<float> decode(GgmlType type, const Bytes& blocks) {
  const auto decoder = ggml_decoder(type);
  EXPECT_NE(decoder, nullptr) << ggml_type_name(type);
  if (!decoder) return {};
  EXPECT_EQ(decoder->name(), ggml_type_name(type));
  EXPECT_EQ(blocks.size() % decoder->block_bytes(), 0u);
  const uint64_t n = blocks.size() / decoder->block_bytes();
  std::vector<float> out(n * decoder->block_elems()), ref(out.size());
  decoder->decode(reinterpret_cast<const std::byte*>(blocks.data()), n, out.data());
  EXPECT_TRUE(dequantize_reference(type, blocks.data(), n, ref.data()));
  EXPECT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)), 0) << ggml_type_name(type);
  return out;
}

// Element j of a packed ggml grid entry.
int grid_at(uint64_t packed, int j) { return static_cast<int>((packed >> (8 * j)) & 0xFF); }
int grid_at_signed(uint64_t packed, int j) { return static_cast<int8_t>(grid_at(packed, j)); }

// ggml-common.h: ksigns_iq2xs[0..3] and kvalues_iq4nl; kvalues_mxfp4 (E2M1 doubled).
constexpr uint8_t kSigns[4] = {0, 129, 130, 3};
constexpr int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int kE2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Q2_K: scales[16] (scale | min << 4), qs[64], f16 d, f16 dmin. Element e = 128g + 32s + m is
// bits 2s..2s+1 of qs[32g + m]; its sub-block e / 16: d * scale * q - dmin * min.
TEST(GgufQuantTypes, Q2_K) {
  std::mt19937 rng(21);
  Bytes b;
  const std::vector<int> q = random_ints(rng, 256, 0, 3), sc = random_ints(rng, 16, 0, 15), mn = random_ints(rng, 16, 0, 15);
  for (int i = 0; i < 16; ++i) b.push_back(static_cast<uint8_t>(sc[i] | (mn[i] << 4)));
  uint8_t qs[64] = {};
  for (int e = 0; e < 256; ++e) qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * ((e % 128) / 32)));
  b.insert(b.end(), qs, qs + 64);
  put_f16(b, 0.5f);
  put_f16(b, 0.25f);
  const std::vector<float> got = decode(GgmlType::Q2_K, b);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(got[e], 0.5f * static_cast<float>(sc[e / 16] * q[e]) - 0.25f * static_cast<float>(mn[e / 16])) << e;
}

// Q3_K: hmask[32], qs[64], 12 scale bytes, f16 d. q = low 2 bits (bits 2s.. of qs[32g + m]) minus 4
// unless bit e / 32 of hmask[m] is set; 6-bit scale i: low 4 bits in byte i % 8 (low nibble for
// i < 8, high for i >= 8), high 2 bits at bits 2(i / 4) of byte 8 + i % 4; value d * (scale - 32) * q.
TEST(GgufQuantTypes, Q3_K) {
  std::mt19937 rng(22);
  Bytes b;
  const std::vector<int> q = random_ints(rng, 256, -4, 3), sc = random_ints(rng, 16, -32, 31);
  uint8_t hmask[32] = {}, qs[64] = {}, scales[12] = {};
  for (int e = 0; e < 256; ++e) {
    const int low = q[e] >= 0 ? q[e] : q[e] + 4;
    if (q[e] >= 0) hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(low << (2 * ((e % 128) / 32)));
  }
  for (int i = 0; i < 16; ++i) {
    const int s6 = sc[i] + 32;
    scales[i % 8] |= static_cast<uint8_t>((s6 & 15) << (i < 8 ? 0 : 4));
    scales[8 + i % 4] |= static_cast<uint8_t>((s6 >> 4) << (2 * (i / 4)));
  }
  b.insert(b.end(), hmask, hmask + 32);
  b.insert(b.end(), qs, qs + 64);
  b.insert(b.end(), scales, scales + 12);
  put_f16(b, -0.125f);
  const std::vector<float> got = decode(GgmlType::Q3_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(got[e], -0.125f * static_cast<float>(sc[e / 16] * q[e])) << e;
}

// Q8_K: f32 d, int8 qs[256], int16 bsums[16] (ignored by the decoder): d * q.
TEST(GgufQuantTypes, Q8_K) {
  std::mt19937 rng(23);
  Bytes b;
  const std::vector<int> q = random_ints(rng, 256, -128, 127);
  put(b, 0.0078125f);
  for (int v : q) b.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
  for (int i = 0; i < 16; ++i) put(b, static_cast<int16_t>(12345));
  const std::vector<float> got = decode(GgmlType::Q8_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(got[e], 0.0078125f * static_cast<float>(q[e])) << e;
}

// TQ1_0: digits t in {0, 1, 2} (value (t - 1) * d), packed as quantize_row_tq1_0_ref does: five
// (or four) digits as a base-3 number, first digit most significant, scaled to a byte by
// ceil(x * 256 / 243). Bytes 0..31 hold elements 32p + m, bytes 32..47 elements 160 + 16p + m, qh's
// 4 bytes elements 240 + 4p + m; then f16 d.
TEST(GgufQuantTypes, TQ1_0) {
  std::mt19937 rng(24);
  const std::vector<int> t = random_ints(rng, 256, 0, 2);
  auto pack = [&](int first, int stride, int digits) {
    int x = 0;
    for (int p = 0; p < 5; ++p) x = x * 3 + (p < digits ? t[first + stride * p] : 0);
    return static_cast<uint8_t>((x * 256 + 242) / 243);
  };
  Bytes b;
  for (int m = 0; m < 32; ++m) b.push_back(pack(m, 32, 5));
  for (int m = 0; m < 16; ++m) b.push_back(pack(160 + m, 16, 5));
  for (int m = 0; m < 4; ++m) b.push_back(pack(240 + m, 4, 4));
  put_f16(b, 1.5f);
  const std::vector<float> got = decode(GgmlType::TQ1_0, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(got[e], 1.5f * static_cast<float>(t[e] - 1)) << e;
}

// TQ2_0: 2-bit codes (bits 2s.. of byte 32g + m for element 128g + 32s + m), f16 d: (code - 1) * d.
TEST(GgufQuantTypes, TQ2_0) {
  std::mt19937 rng(25);
  const std::vector<int> t = random_ints(rng, 256, 0, 3);
  uint8_t qs[64] = {};
  for (int e = 0; e < 256; ++e) qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(t[e] << (2 * ((e % 128) / 32)));
  Bytes b(qs, qs + 64);
  put_f16(b, -2.0f);
  const std::vector<float> got = decode(GgmlType::TQ2_0, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(got[e], -2.0f * static_cast<float>(t[e] - 1)) << e;
}

// Q1_0: f16 d, 16 bytes of signs (bit j % 8 of byte j / 8 for element j): d when set, -d when not.
// ggml's own dequantisation of ggml_quantize_chunk's blocks is compared by scripts/llama-cpp-check.sh
// (a llama.cpp that has the type); the pinned gguf-py has none.
TEST(GgufQuantTypes, Q1_0) {
  std::mt19937 rng(41);
  const std::vector<int> t = random_ints(rng, 128, 0, 1);
  uint8_t qs[16] = {};
  for (int e = 0; e < 128; ++e) qs[e / 8] |= static_cast<uint8_t>(t[e] << (e % 8));
  Bytes b;
  put_f16(b, 0.75f);
  b.insert(b.end(), qs, qs + 16);
  const std::vector<float> got = decode(GgmlType::Q1_0, b);
  for (int e = 0; e < 128; ++e) EXPECT_EQ(got[e], t[e] ? 0.75f : -0.75f) << e;
}

// IQ4_NL: f16 d, 16 bytes of codes (low nibble element j, high nibble j + 16): d * kvalues[code].
TEST(GgufQuantTypes, IQ4_NL) {
  std::mt19937 rng(26);
  const std::vector<int> c = random_ints(rng, 32, 0, 15);
  Bytes b;
  put_f16(b, 0.25f);
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(c[j] | (c[j + 16] << 4)));
  const std::vector<float> got = decode(GgmlType::IQ4_NL, b);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(got[e], 0.25f * static_cast<float>(kIq4nl[c[e]])) << e;
}

// IQ4_XS: f16 d, u16 scales_h (2 high bits per group), scales_l[4] (4 low bits, low nibble for even
// groups), then 8 groups of 16 bytes as IQ4_NL; d * (scale - 32) * kvalues[code].
TEST(GgufQuantTypes, IQ4_XS) {
  std::mt19937 rng(27);
  const std::vector<int> c = random_ints(rng, 256, 0, 15), ls = random_ints(rng, 8, 0, 63);
  Bytes b;
  put_f16(b, 0.5f);
  uint16_t scales_h = 0;
  uint8_t scales_l[4] = {};
  for (int ib = 0; ib < 8; ++ib) {
    scales_h = static_cast<uint16_t>(scales_h | ((ls[ib] >> 4) << (2 * ib)));
    scales_l[ib / 2] |= static_cast<uint8_t>((ls[ib] & 15) << (4 * (ib % 2)));
  }
  put(b, scales_h);
  b.insert(b.end(), scales_l, scales_l + 4);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(c[32 * ib + j] | (c[32 * ib + 16 + j] << 4)));
  const std::vector<float> got = decode(GgmlType::IQ4_XS, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(got[e], 0.5f * static_cast<float>((ls[e / 32] - 32) * kIq4nl[c[e]])) << e;
}

// MXFP4: E8M0 e (scale 2^(e - 127)), 16 bytes of E2M1 codes (low nibble j, high j + 16). Blocks with
// e = 127 (1.0), 130 (8.0) and 0 (2^-127, subnormal in f32).
TEST(GgufQuantTypes, MXFP4) {
  std::mt19937 rng(28);
  const int exps[3] = {127, 130, 0};
  const float scales[3] = {1.0f, 8.0f, std::ldexp(1.0f, -127)};
  std::vector<int> c;
  Bytes b;
  for (int e : exps) {
    const std::vector<int> block = random_ints(rng, 32, 0, 15);
    b.push_back(static_cast<uint8_t>(e));
    for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(block[j] | (block[j + 16] << 4)));
    c.insert(c.end(), block.begin(), block.end());
  }
  const std::vector<float> got = decode(GgmlType::MXFP4, b);
  for (int i = 0; i < 96; ++i) EXPECT_EQ(got[i], scales[i / 32] * static_cast<float>(kE2m1x2[c[i]]) / 2.0f) << i;
}

// NVFP4: four unsigned E4M3 scales (bias 7; 0x00 and 0x7F are 0), then per 16 elements 8 bytes of
// E2M1 codes, low nibbles first. Scales: 0x38 = 1.0, 0x41 = 2.25, 0x7F = 0, 0x03 = 3 * 2^-9.
TEST(GgufQuantTypes, NVFP4) {
  std::mt19937 rng(29);
  const uint8_t e4m3[4] = {0x38, 0x41, 0x7F, 0x03};
  const float scales[4] = {1.0f, 2.25f, 0.0f, 3.0f / 512.0f};
  const std::vector<int> c = random_ints(rng, 64, 0, 15);
  Bytes b(e4m3, e4m3 + 4);
  for (int s = 0; s < 4; ++s)
    for (int j = 0; j < 8; ++j) b.push_back(static_cast<uint8_t>(c[16 * s + j] | (c[16 * s + 8 + j] << 4)));
  const std::vector<float> got = decode(GgmlType::NVFP4, b);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(got[i], scales[i / 16] * static_cast<float>(kE2m1x2[c[i]]) / 2.0f) << i;
}

// ggml-common.h: iq2xxs_grid (= iq2xs_grid = iq2s_grid for these) entries 0..3; iq2xs_grid[510..511];
// iq2s_grid[1022..1023]; iq3xxs_grid[0..3]; iq3s_grid[0..3] and [511]; iq1s_grid[0..3].
constexpr uint64_t kIq2Grid[4] = {0x0808080808080808, 0x080808080808082b, 0x0808080808081919, 0x0808080808082b08};
constexpr uint64_t kIq2xs510 = 0x2b2b2b2b2b190819, kIq2xs511 = 0x2b2b2b2b2b2b2b2b;
constexpr uint64_t kIq2s1022 = 0x2b2b2b2b2b082b08, kIq2s1023 = 0x2b2b2b2b2b2b2b2b;
constexpr uint32_t kIq3xxsGrid[4] = {0x04040404, 0x04040414, 0x04040424, 0x04040c0c};
constexpr uint32_t kIq3sGrid[4] = {0x01010101, 0x01010103, 0x01010105, 0x0101010b};
constexpr uint32_t kIq3s511 = 0x0f0f0101;
constexpr uint64_t kIq1sGrid[4] = {0xffffffffffffffff, 0xffffffffffffff01, 0xffffffffffff0000, 0xffffffffffff01ff};

float sign(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.0f : 1.0f; }

// IQ2_XXS: f16 d; per 32 elements two u32: four grid indices (bytes), then four 7-bit sign indices
// (bits 7l..) and the scale (bits 28..31): d * (0.5 + scale) / 4 * grid * sign.
TEST(GgufQuantTypes, IQ2_XXS) {
  std::mt19937 rng(30);
  Bytes b;
  put_f16(b, 2.0f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    const std::vector<int> idx = random_ints(rng, 4, 0, 3), sg = random_ints(rng, 4, 0, 3);
    const uint32_t ls = static_cast<uint32_t>(ib * 2 + 1);
    uint32_t aux = ls << 28;
    for (int l = 0; l < 4; ++l) {
      b.push_back(static_cast<uint8_t>(idx[l]));
      aux |= static_cast<uint32_t>(sg[l]) << (7 * l);
    }
    put(b, aux);
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 8; ++j)
        want.push_back(2.0f * (0.5f + static_cast<float>(ls)) / 4.0f * static_cast<float>(grid_at(kIq2Grid[idx[l]], j)) * sign(kSigns[sg[l]], j));
  }
  EXPECT_EQ(decode(GgmlType::IQ2_XXS, b), want);
}

// IQ2_XS: f16 d; 32 u16 (9-bit grid index | 7-bit sign index << 9); 8 bytes of 4-bit scales, one per
// 16 elements (low nibble first): d * (0.5 + scale) / 4 * grid * sign.
TEST(GgufQuantTypes, IQ2_XS) {
  std::mt19937 rng(31);
  const uint64_t grids[6] = {kIq2Grid[0], kIq2Grid[1], kIq2Grid[2], kIq2Grid[3], kIq2xs510, kIq2xs511};
  const int indices[6] = {0, 1, 2, 3, 510, 511};
  const std::vector<int> pick = random_ints(rng, 32, 0, 5), sg = random_ints(rng, 32, 0, 3), ls = random_ints(rng, 16, 0, 15);
  Bytes b;
  put_f16(b, 0.5f);
  for (int k = 0; k < 32; ++k) put(b, static_cast<uint16_t>(indices[pick[k]] | (sg[k] << 9)));
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(ls[2 * i] | (ls[2 * i + 1] << 4)));
  const std::vector<float> got = decode(GgmlType::IQ2_XS, b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8, j = e % 8;
    EXPECT_EQ(got[e], 0.5f * (0.5f + static_cast<float>(ls[k / 2])) / 4.0f * static_cast<float>(grid_at(grids[pick[k]], j)) * sign(kSigns[sg[k]], j)) << e;
  }
}

// IQ2_S: f16 d; qs[32] (grid index low 8 bits); signs[32] (bit j of byte k: element 8k + j); qh[8]
// (bits 2(k % 4).. of qh[k / 4]: index bits 8-9); scales[8] as IQ2_XS.
TEST(GgufQuantTypes, IQ2_S) {
  std::mt19937 rng(32);
  const uint64_t grids[6] = {kIq2Grid[0], kIq2Grid[1], kIq2Grid[2], kIq2Grid[3], kIq2s1022, kIq2s1023};
  const int indices[6] = {0, 1, 2, 3, 1022, 1023};
  const std::vector<int> pick = random_ints(rng, 32, 0, 5), sg = random_ints(rng, 32, 0, 255), ls = random_ints(rng, 16, 0, 15);
  Bytes b;
  put_f16(b, 1.0f);
  for (int k = 0; k < 32; ++k) b.push_back(static_cast<uint8_t>(indices[pick[k]] & 255));
  for (int k = 0; k < 32; ++k) b.push_back(static_cast<uint8_t>(sg[k]));
  uint8_t qh[8] = {};
  for (int k = 0; k < 32; ++k) qh[k / 4] |= static_cast<uint8_t>((indices[pick[k]] >> 8) << (2 * (k % 4)));
  b.insert(b.end(), qh, qh + 8);
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(ls[2 * i] | (ls[2 * i + 1] << 4)));
  const std::vector<float> got = decode(GgmlType::IQ2_S, b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8, j = e % 8;
    EXPECT_EQ(got[e], (0.5f + static_cast<float>(ls[k / 2])) / 4.0f * static_cast<float>(grid_at(grids[pick[k]], j)) * sign(static_cast<uint8_t>(sg[k]), j)) << e;
  }
}

// IQ3_XXS: f16 d; qs[64] (grid indices, 4 elements each); per 32 elements a u32 of four 7-bit sign
// indices (8 elements each) and the scale (bits 28..31): d * (0.5 + scale) / 2 * grid * sign.
TEST(GgufQuantTypes, IQ3_XXS) {
  std::mt19937 rng(33);
  const std::vector<int> idx = random_ints(rng, 64, 0, 3), sg = random_ints(rng, 32, 0, 3), ls = random_ints(rng, 8, 0, 15);
  Bytes b;
  put_f16(b, 0.25f);
  for (int v : idx) b.push_back(static_cast<uint8_t>(v));
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = static_cast<uint32_t>(ls[ib]) << 28;
    for (int l = 0; l < 4; ++l) aux |= static_cast<uint32_t>(sg[4 * ib + l]) << (7 * l);
    put(b, aux);
  }
  const std::vector<float> got = decode(GgmlType::IQ3_XXS, b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 4, j = e % 4, ib = e / 32, l = (e % 32) / 8;
    const float g = static_cast<float>((kIq3xxsGrid[idx[k]] >> (8 * j)) & 0xFF);
    EXPECT_EQ(got[e], 0.25f * (0.5f + static_cast<float>(ls[ib])) / 2.0f * g * sign(kSigns[sg[4 * ib + l]], e % 8)) << e;
  }
}

// IQ3_S: f16 d; qs[64] (index low 8 bits, 4 elements each); qh[8] (bit k % 8 of qh[k / 8]: index
// bit 8); signs[32] (one bit per element); scales[4] (4 bits per 32 elements, low nibble first):
// d * (1 + 2 scale) * grid * sign.
TEST(GgufQuantTypes, IQ3_S) {
  std::mt19937 rng(34);
  const uint32_t grids[5] = {kIq3sGrid[0], kIq3sGrid[1], kIq3sGrid[2], kIq3sGrid[3], kIq3s511};
  const int indices[5] = {0, 1, 2, 3, 511};
  const std::vector<int> pick = random_ints(rng, 64, 0, 4), sg = random_ints(rng, 32, 0, 255), ls = random_ints(rng, 8, 0, 15);
  Bytes b;
  put_f16(b, 0.5f);
  uint8_t qh[8] = {};
  for (int k = 0; k < 64; ++k) {
    b.push_back(static_cast<uint8_t>(indices[pick[k]] & 255));
    qh[k / 8] |= static_cast<uint8_t>((indices[pick[k]] >> 8) << (k % 8));
  }
  b.insert(b.end(), qh, qh + 8);
  for (int v : sg) b.push_back(static_cast<uint8_t>(v));
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(ls[2 * i] | (ls[2 * i + 1] << 4)));
  const std::vector<float> got = decode(GgmlType::IQ3_S, b);
  for (int e = 0; e < 256; ++e) {
    const float g = static_cast<float>((grids[pick[e / 4]] >> (8 * (e % 4))) & 0xFF);
    EXPECT_EQ(got[e], 0.5f * static_cast<float>(1 + 2 * ls[e / 32]) * g * sign(static_cast<uint8_t>(sg[e / 8]), e % 8)) << e;
  }
}

// IQ1_S: f16 d; qs[32] (index low 8 bits, 8 elements of -1/0/1 each); per 32 elements a u16: index
// bits 8-10 (3t.. for index 4ib + t), scale (bits 12-14), delta sign (bit 15):
// d * (2 scale + 1) * (grid +- 0.125).
TEST(GgufQuantTypes, IQ1_S) {
  std::mt19937 rng(35);
  const std::vector<int> idx = random_ints(rng, 32, 0, 3), ls = random_ints(rng, 8, 0, 7), neg = random_ints(rng, 8, 0, 1);
  Bytes b;
  put_f16(b, 0.5f);
  for (int v : idx) b.push_back(static_cast<uint8_t>(v));
  for (int ib = 0; ib < 8; ++ib) put(b, static_cast<uint16_t>((ls[ib] << 12) | (neg[ib] << 15)));
  const std::vector<float> got = decode(GgmlType::IQ1_S, b);
  for (int e = 0; e < 256; ++e) {
    const int ib = e / 32;
    const float delta = neg[ib] ? -0.125f : 0.125f;
    EXPECT_EQ(got[e], 0.5f * static_cast<float>(2 * ls[ib] + 1) * (static_cast<float>(grid_at_signed(kIq1sGrid[idx[e / 8]], e % 8)) + delta)) << e;
  }
}

// IQ1_M: qs[32] (index low 8 bits); qh[16] (a nibble per index, low first: bits 8-10, then the delta
// sign); four u16: 3-bit scales in bits 3(i % 4).. of u16 i / 4, one per 16 elements, and the top
// nibbles (u16 0 lowest) together the f16 d: d * (2 scale + 1) * (grid +- 0.125).
TEST(GgufQuantTypes, IQ1_M) {
  std::mt19937 rng(36);
  const std::vector<int> idx = random_ints(rng, 32, 0, 3), neg = random_ints(rng, 32, 0, 1), ls = random_ints(rng, 16, 0, 7);
  Bytes b;
  for (int v : idx) b.push_back(static_cast<uint8_t>(v));
  for (int i = 0; i < 16; ++i) b.push_back(static_cast<uint8_t>((neg[2 * i] << 3) | (neg[2 * i + 1] << 7)));
  const uint16_t d_bits = f32_to_f16_bits(-0.25f);
  for (int w = 0; w < 4; ++w) {
    uint16_t word = static_cast<uint16_t>(((d_bits >> (4 * w)) & 0xF) << 12);
    for (int i = 0; i < 4; ++i) word = static_cast<uint16_t>(word | (ls[4 * w + i] << (3 * i)));
    put(b, word);
  }
  const std::vector<float> got = decode(GgmlType::IQ1_M, b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8;
    const float delta = neg[k] ? -0.125f : 0.125f;
    EXPECT_EQ(got[e], -0.25f * static_cast<float>(2 * ls[e / 16] + 1) * (static_cast<float>(grid_at_signed(kIq1sGrid[idx[k]], e % 8)) + delta)) << e;
  }
}

// Every ggml type has a decoder now except Q8_1 (ggml has no dequantisation of it) and Q2_0 (neither
// the pinned gguf-py nor the llama.cpp scripts/llama-cpp-check.sh has run dequantises it, so nothing
// here could check a decoder of it).
TEST(GgufQuantTypes, TheTypesLeftUndecoded) {
  for (uint32_t id = 0; id < 64; ++id) {
    const GgmlTypeTraits* t = ggml_type_traits(id);
    if (!t || ggml_raw_dtype(t->type)) continue;
    const bool undecoded = t->type == GgmlType::Q8_1 || t->type == GgmlType::Q2_0;
    EXPECT_EQ(ggml_decoder(t->type) == nullptr, undecoded) << t->name;
  }
}

}  // namespace
}  // namespace wl::gguf
