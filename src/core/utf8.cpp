#include "core/utf8.hpp"

#include <cstdint>

namespace wl::safetensors {

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const auto is_cont = [&](size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t b = byte(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Sequence length and the allowed range of the second byte (which rules out overlong forms,
    // surrogates and code points above U+10FFFF), per the Unicode table of well-formed sequences.
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + 1 >= text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (!is_cont(i + k)) return i;
    i += len;
  }
  return std::nullopt;
}

}  // namespace wl::safetensors
