#include "formats/pytorch/byteswap.hpp"

#include <cstring>

#include <fmt/format.h>

namespace wl::pytorch {
namespace {

uint16_t swap(uint16_t v) { return __builtin_bswap16(v); }
uint32_t swap(uint32_t v) { return __builtin_bswap32(v); }
uint64_t swap(uint64_t v) { return __builtin_bswap64(v); }

template <typename U>
void swap_elements(const std::byte* src, uint64_t n, std::byte* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    U v;
    std::memcpy(&v, src + i * sizeof(U), sizeof(U));
    v = swap(v);
    std::memcpy(dst + i * sizeof(U), &v, sizeof(U));
  }
}

class BigEndianDecoder final : public Decoder {
 public:
  explicit BigEndianDecoder(DType dtype) : dtype_(dtype) {}

  std::string name() const override { return fmt::format("{} big-endian", dtype_name(dtype_)); }
  std::string spec() const override { return fmt::format(R"({{"kind":"big-endian","dtype":"{}"}})", dtype_name(dtype_)); }
  uint64_t block_elems() const override { return 1; }
  uint64_t block_bytes() const override { return dtype_size(dtype_); }
  DType output_dtype() const override { return dtype_; }

  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    auto* out = static_cast<std::byte*>(dst);
    switch (dtype_size(dtype_)) {
      case 2: swap_elements<uint16_t>(src, nblocks, out); return;
      case 4: swap_elements<uint32_t>(src, nblocks, out); return;
      case 8: swap_elements<uint64_t>(src, nblocks, out); return;
      default: std::memcpy(out, src, nblocks * dtype_size(dtype_)); return;
    }
  }

 private:
  DType dtype_;
};

}  // namespace

std::shared_ptr<const Decoder> big_endian_decoder(DType dtype) { return std::make_shared<BigEndianDecoder>(dtype); }

}  // namespace wl::pytorch
