// The decoder of safetensors' sub-byte floats: the OCP MX element types E2M1 (F4) and E2M3 / E3M2
// (F6_*), values from core/microscaling.hpp, written as F32 (every code is exact in BF16 and F16
// too, so the I/O engine's conversion to them is exact).
//
// Bit order. The safetensors crate only counts bits (Dtype::bitsize: 4 and 6; a tensor must fill
// whole bytes) and its header records the logical element count (shape [.., 2k] for k bytes of
// F4 in a row). For F4 its Python binding hands the bytes to torch as float4_e2m1fn_x2 with the last
// dimension halved, and torch's c10/util/Float4_e2m1fn_x2.h puts element 0 in bits 3..0 and
// element 1 in bits 7..4 (low nibble first, as compressed-tensors' and gpt-oss's FP4 packing).
// Nothing in safetensors, torch (no FP6 dtype) or ml_dtypes (one float6 per byte, 0bXXSEEMMM)
// says more about F6, so its codes continue the same least-significant-bit-first stream: element i
// at bits [6i, 6i + 6) of the bytes read as one little-endian number, which is zarr's packbits
// codec for float6_e2m3fn / float6_e3m2fn (zarr-extensions, codecs/packbits: element i is bits
// [i*k, (i+1)*k), byte i bits [8i, 8i+8), bit indices counted from the least significant).
// So 3 bytes hold 4 elements: b0 = e0 | e1 << 6, b1 = e1 >> 2 | e2 << 4, b2 = e2 >> 4 | e3 << 2.
#include "weightloader/formats/safetensors.hpp"

#include <array>
#include <numeric>

#include <fmt/format.h>

#include "core/microscaling.hpp"

namespace wl {
namespace {

struct SubByteFloat {
  std::string_view name;  // the header's dtype
  unsigned bits;          // per element
  const float* values;    // by code
};

// The registered sub-byte floats, one line each.
constexpr SubByteFloat kSubByteFloats[] = {
    {"F4", 4, mx::kE2m1.data()},
    {"F6_E2M3", 6, mx::kE2m3.data()},
    {"F6_E3M2", 6, mx::kE3m2.data()},
};

class SubByteFloatDecoder final : public Decoder {
 public:
  explicit SubByteFloatDecoder(const SubByteFloat& type)
      : type_(type), elems_(8 / std::gcd(type.bits, 8u)), bytes_(elems_ * type.bits / 8) {}
  std::string name() const override { return std::string(type_.name); }
  std::string spec() const override { return fmt::format(R"({{"kind":"subbyte-float","dtype":"{}"}})", type_.name); }
  uint64_t block_elems() const override { return elems_; }  // F4: 2 in a byte; F6: 4 in 3 bytes
  uint64_t block_bytes() const override { return bytes_; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    const auto* in = reinterpret_cast<const uint8_t*>(src);
    auto* out = static_cast<float*>(dst);
    const uint32_t mask = (1u << type_.bits) - 1;
    for (uint64_t b = 0; b < nblocks; ++b, in += bytes_) {
      uint32_t stream = 0;  // the block's bytes as one little-endian number
      for (unsigned k = 0; k < bytes_; ++k) stream |= static_cast<uint32_t>(in[k]) << (8 * k);
      for (unsigned j = 0; j < elems_; ++j) *out++ = type_.values[(stream >> (j * type_.bits)) & mask];
    }
  }

 private:
  const SubByteFloat& type_;
  unsigned elems_, bytes_;
};

}  // namespace

std::shared_ptr<const Decoder> safetensors_subbyte_decoder(std::string_view dtype_name) {
  static const std::array<std::shared_ptr<const Decoder>, std::size(kSubByteFloats)> all = [] {
    std::array<std::shared_ptr<const Decoder>, std::size(kSubByteFloats)> a;
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::make_shared<const SubByteFloatDecoder>(kSubByteFloats[i]);
    return a;
  }();
  for (size_t i = 0; i < all.size(); ++i)
    if (kSubByteFloats[i].name == dtype_name) return all[i];
  return nullptr;
}

}  // namespace wl
