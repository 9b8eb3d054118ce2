#include "model/tokenizer/byte_level.hpp"

#include <array>
#include <cstdint>

namespace wl::tok {

namespace {

bool stands_for_itself(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

struct Alphabet {
  std::array<std::string, 256> spelling;  // byte -> UTF-8 of its code point (all below U+0800: 1 or 2 bytes)
  std::array<int16_t, 0x144> byte_of;     // code point -> byte, -1 outside the alphabet

  Alphabet() {
    byte_of.fill(-1);
    unsigned next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      const unsigned cp = stands_for_itself(b) ? b : next++;
      byte_of[cp] = static_cast<int16_t>(b);
      spelling[b] = cp < 0x80 ? std::string(1, static_cast<char>(cp))
                              : std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string bytes_to_alphabet(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += a.spelling[b];
  return out;
}

std::optional<std::string> alphabet_to_bytes(std::string_view piece) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    const auto c0 = static_cast<unsigned char>(piece[i]);
    unsigned cp;
    if (c0 < 0x80) {
      cp = c0, i += 1;
    } else if ((c0 & 0xE0) == 0xC0 && i + 1 < piece.size() && (static_cast<unsigned char>(piece[i + 1]) & 0xC0) == 0x80) {  // the alphabet is all below U+0800
      cp = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(piece[i + 1]) & 0x3Fu), i += 2;
    } else {
      return std::nullopt;
    }
    if (cp >= a.byte_of.size() || a.byte_of[cp] < 0) return std::nullopt;
    out += static_cast<char>(a.byte_of[cp]);
  }
  return out;
}

}  // namespace wl::tok
