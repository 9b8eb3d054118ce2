#include "formats/llama2c/q8.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::llama2c {

static_assert(std::endian::native == std::endian::little, "scales are copied as little-endian float32");

std::string Q8Decoder::name() const { return fmt::format("Q8_0/g{}", group_size_); }
std::string Q8Decoder::spec() const { return fmt::format(R"({{"kind":"llama2c-q8","group":{}}})", group_size_); }

void Q8Decoder::decode(const std::byte* src, uint64_t nblocks, void* dst) const {
  const auto* q = reinterpret_cast<const int8_t*>(src);
  const std::byte* scales = src + nblocks * group_size_;
  auto* out = static_cast<float*>(dst);
  for (uint64_t b = 0; b < nblocks; ++b) {
    float scale;
    std::memcpy(&scale, scales + b * sizeof(float), sizeof scale);
    for (uint64_t i = b * group_size_, end = i + group_size_; i < end; ++i) out[i] = static_cast<float>(q[i]) * scale;
  }
}

void quantise_q8(const float* x, uint64_t n, uint64_t group_size, int8_t* q, float* scales,
                 const std::string& file, const std::string& tensor) {
  for (uint64_t g = 0; g < n / group_size; ++g) {
    const float* in = x + g * group_size;
    float max_abs = 0.0f;
    for (uint64_t i = 0; i < group_size; ++i) {
      if (!std::isfinite(in[i]))
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("value {} at index {} cannot be quantised to int8", in[i], g * group_size + i), file,
                    tensor);
      max_abs = std::max(max_abs, std::fabs(in[i]));
    }
    const float scale = max_abs / 127.0f;
    scales[g] = scale;
    // nearbyint rounds half to even, as torch.round; the clamp only matters for subnormal scales,
    // whose rounding can push x / scale past 127.
    for (uint64_t i = 0; i < group_size; ++i)
      q[g * group_size + i] =
          scale == 0.0f ? 0 : static_cast<int8_t>(std::clamp(std::nearbyint(in[i] / scale), -127.0f, 127.0f));
  }
}

}  // namespace wl::llama2c
