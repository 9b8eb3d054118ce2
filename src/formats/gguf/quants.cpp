// Dequantisation of ggml's block formats into F32, value for value as ggml's reference
// dequantize_row_* functions compute it (same operations in the same order, so the same floats),
// and Q8_0 quantisation as quantize_row_q8_0_ref.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::gguf {
namespace {

static_assert(std::endian::native == std::endian::little, "block fields are read straight from memory");

float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return f16_bits_to_f32(bits);
}

// Q4_0: f16 d, 16 bytes of nibbles; element j is the low nibble of byte j, element j + 16 the high.
void q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1: f16 d, f16 m, nibbles as Q4_0, unsigned: x * d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// The fifth bit of element j (0..31) of a Q5 block, from the 32-bit qh word, as 0 or 16.
int q5_high(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }

// Q5_0: f16 d, u32 qh (bit j = fifth bit of element j), nibbles as Q4_0; x - 16 times d.
void q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, sizeof qh);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(((qs[j] & 0x0F) | q5_high(qh, j)) - 16) * d;
    y[j + 16] = static_cast<float>(((qs[j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
  }
}

// Q5_1: f16 d, f16 m, u32 qh, nibbles; unsigned x * d + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, sizeof qh);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) | q5_high(qh, j)) * d + m;
    y[j + 16] = static_cast<float>((qs[j] >> 4) | q5_high(qh, j + 16)) * d + m;
  }
}

// Q8_0: f16 d, 32 int8.
void q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// The 6-bit scale and min of sub-block j (0..7) packed in the 12 scale bytes of Q4_K / Q5_K:
// sub-blocks 0-3 in the low 6 bits of bytes j and j + 4; sub-blocks 4-7 take their low 4 bits
// from byte j + 4 (scale: low nibble, min: high nibble) and their top 2 bits from the top bits of
// bytes j - 4 (scale) and j (min).
void k4_scale_min(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles. Four groups of 64 elements: the
// first 32 are the low nibbles of 32 bytes (sub-block 2g), the next 32 the high nibbles (2g + 1).
void q4_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int g = 0; g < 4; ++g, q += 32, y += 64) {
    int sc, m;
    k4_scale_min(2 * g, scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    k4_scale_min(2 * g + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// Q5_K: as Q4_K with 32 bytes qh between the scales and the nibbles: bit 2g of qh[l] is the fifth
// bit of element l of group g's first half, bit 2g + 1 of its second half.
void q5_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  for (int g = 0; g < 4; ++g, q += 32, y += 64) {
    int sc, m;
    k4_scale_min(2 * g, scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    k4_scale_min(2 * g + 1, scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * g)), hi_bit = static_cast<uint8_t>(2u << (2 * g));
    for (int l = 0; l < 32; ++l)
      y[l] = d1 * static_cast<float>((q[l] & 0x0F) + ((qh[l] & lo_bit) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      y[32 + l] = d2 * static_cast<float>((q[l] >> 4) + ((qh[l] & hi_bit) ? 16 : 0)) - m2;
  }
}

// Q6_K: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, f16 d. Two halves of
// 128 elements, each using 64 bytes of ql, 32 of qh and 8 scales: element l + 32k (l < 32) takes
// its low bits from nibble k / 2 of ql[l + 32 (k % 2)] and its high bits from bits 2k..2k+1 of
// qh[l], with scale l / 16 + 2k; values are (6-bit - 32) * d * scale.
void q6_k(const uint8_t* b, float* y) {
  const float d = f16_at(b + 208);
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

using BlockFn = void (*)(const uint8_t* block, float* out);

class BlockDecoder final : public Decoder {
 public:
  BlockDecoder(GgmlType type, BlockFn fn) : traits_(*ggml_type_traits(static_cast<uint32_t>(type))), fn_(fn) {}
  std::string name() const override { return std::string(traits_.name); }
  std::string spec() const override { return fmt::format(R"({{"kind":"ggml","type":{}}})", static_cast<uint32_t>(traits_.type)); }
  uint64_t block_elems() const override { return traits_.block_elems; }
  uint64_t block_bytes() const override { return traits_.block_bytes; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    const auto* in = reinterpret_cast<const uint8_t*>(src);
    auto* out = static_cast<float*>(dst);
    if (dequantize_simd(traits_.type, in, nblocks, out)) return;
    for (uint64_t i = 0; i < nblocks; ++i) fn_(in + i * traits_.block_bytes, out + i * traits_.block_elems);
  }

 private:
  const GgmlTypeTraits& traits_;
  BlockFn fn_;
};

template <GgmlType Type, BlockFn Fn>
std::shared_ptr<const Decoder> decoder_of() {
  static const auto decoder = std::make_shared<const BlockDecoder>(Type, Fn);
  return decoder;
}

}  // namespace

std::shared_ptr<const Decoder> ggml_decoder(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return decoder_of<GgmlType::Q4_0, q4_0>();
    case GgmlType::Q4_1: return decoder_of<GgmlType::Q4_1, q4_1>();
    case GgmlType::Q5_0: return decoder_of<GgmlType::Q5_0, q5_0>();
    case GgmlType::Q5_1: return decoder_of<GgmlType::Q5_1, q5_1>();
    case GgmlType::Q8_0: return decoder_of<GgmlType::Q8_0, q8_0>();
    case GgmlType::Q4_K: return decoder_of<GgmlType::Q4_K, q4_k>();
    case GgmlType::Q5_K: return decoder_of<GgmlType::Q5_K, q5_k>();
    case GgmlType::Q6_K: return decoder_of<GgmlType::Q6_K, q6_k>();
    default: return nullptr;
  }
}

bool dequantize_reference(GgmlType type, const uint8_t* blocks, uint64_t nblocks, float* out) {
  BlockFn fn = nullptr;
  switch (type) {
    case GgmlType::Q4_0: fn = q4_0; break;
    case GgmlType::Q4_1: fn = q4_1; break;
    case GgmlType::Q5_0: fn = q5_0; break;
    case GgmlType::Q5_1: fn = q5_1; break;
    case GgmlType::Q8_0: fn = q8_0; break;
    case GgmlType::Q4_K: fn = q4_k; break;
    case GgmlType::Q5_K: fn = q5_k; break;
    case GgmlType::Q6_K: fn = q6_k; break;
    default: return false;
  }
  const GgmlTypeTraits& traits = *ggml_type_traits(static_cast<uint32_t>(type));
  for (uint64_t i = 0; i < nblocks; ++i) fn(blocks + i * traits.block_bytes, out + i * traits.block_elems);
  return true;
}

void quantize_q8_0(const float* x, uint64_t n, std::byte* out) {
  for (uint64_t i = 0; i < n; i += 32, x += 32, out += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t bits = f32_to_f16_bits(d);
    std::memcpy(out, &bits, sizeof bits);
    for (int j = 0; j < 32; ++j)
      out[2 + j] = static_cast<std::byte>(static_cast<int8_t>(std::round(x[j] * id)));
  }
}

}  // namespace wl::gguf
