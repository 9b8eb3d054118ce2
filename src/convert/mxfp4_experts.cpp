#include "convert/mxfp4_experts.hpp"

#include <algorithm>
#include <vector>

#include "convert/split_part.hpp"

namespace wl {

std::optional<quant::Mxfp4Stored> mxfp4_part_blocks(const TensorInfo& t, const StoredParts& how) {
  std::optional<quant::Mxfp4Stored> m = quant::mxfp4_stored(t);
  const uint64_t n = std::max<uint64_t>(how.names.size(), 1);
  if (!m || !how.transposed || (n > 1 && !how.columns) || m->scales.shape[1] % n != 0) return std::nullopt;
  return m;
}

void ggml_mxfp4_block(uint8_t scale, const uint8_t* codes, uint8_t* out) {
  out[0] = scale;
  // Element k is nibble k % 2 of byte k / 2.
  const auto code = [codes](int k) { return static_cast<uint8_t>((codes[k / 2] >> (4 * (k % 2))) & 0x0F); };
  for (int j = 0; j < 16; ++j) out[1 + j] = static_cast<uint8_t>(code(j) | (code(j + 16) << 4));
}

uint64_t write_mxfp4_part(const WeightSource& s, const quant::Mxfp4Stored& m, const StoredParts& how, size_t index,
                          GgufStreamWriter& writer) {
  const uint64_t experts = m.scales.shape[0], rows = m.scales.shape[1], groups = m.scales.shape[2];
  const uint64_t n = std::max<uint64_t>(how.names.size(), 1), part_rows = rows / n;
  std::vector<uint8_t> blocks(rows * groups * 16), scales(rows * groups), out(part_rows * groups * 17);
  uint64_t written = 0;
  for (uint64_t e = 0; e < experts; ++e) {
    s.read(m.blocks, DType::U8, blocks.data(), Slice{0, e, e + 1});
    s.read(m.scales, DType::U8, scales.data(), Slice{0, e, e + 1});
    for (uint64_t r = 0; r < part_rows; ++r) {  // the part's row r: column `from` of the dense tensor
      const uint64_t from = part_source(how, index, r, part_rows);
      for (uint64_t g = 0; g < groups; ++g)
        ggml_mxfp4_block(scales[from * groups + g], &blocks[(from * groups + g) * 16], &out[(r * groups + g) * 17]);
    }
    writer.write_stored(std::as_bytes(std::span(out)));
    written += out.size();
  }
  return written;
}

}  // namespace wl
