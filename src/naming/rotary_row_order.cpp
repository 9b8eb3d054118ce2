// The rotary row permutation between Meta's interleaved q/k layout (Meta, GGUF, llama2.c,
// torchtune) and Hugging Face's, whose every head holds its two rotary halves one after the other.
#include <fmt/format.h>

#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

std::vector<uint64_t> rotary_row_order(uint64_t rows, uint64_t heads, RotaryOrder order, const HeadCountOrigin& origin,
                                       const std::string& tensor) {
  // heads <= rows / 2 first, so that 2 * heads cannot wrap around.
  if (heads == 0 || heads > rows / 2 || rows % (2 * heads) != 0)
    throw Error(origin.code, fmt::format("{} rows do not split into {} heads of an even size ({})", rows, heads, origin.field),
                origin.file, tensor);
  const uint64_t d = rows / heads, half = d / 2;
  std::vector<uint64_t> out(rows);
  // Within each head, Hugging Face row j * half + i (j = 0, 1) is interleaved row 2i + j.
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t j = 0; j < 2; ++j)
      for (uint64_t i = 0; i < half; ++i) {
        const uint64_t hf = h * d + j * half + i, interleaved = h * d + 2 * i + j;
        if (order == RotaryOrder::InterleavedAsHf) out[hf] = interleaved;
        else out[interleaved] = hf;
      }
  return out;
}

}  // namespace wl
