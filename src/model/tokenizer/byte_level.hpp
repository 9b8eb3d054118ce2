// GPT-2's byte-level alphabet (bytes_to_unicode in GPT-2's encoder.py, ByteLevel in Hugging Face's
// tokenizers): every byte is one printable code point, so that a vocabulary of Unicode strings
// covers every byte sequence. The printable bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand
// for themselves; the other 68 (controls, space, DEL, U+00A0, U+00AD) become U+0100.. in byte order
// (space is U+0120 "Ġ", newline U+010A "Ċ").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wl::tok {

// `bytes` with each byte written as its code point (UTF-8).
std::string bytes_to_alphabet(std::string_view bytes);

// The bytes that `piece` (UTF-8) spells in the alphabet; nullopt when a code point of it is outside
// the alphabet (an added token such as "<|endoftext|> " is then its own bytes, as tokenizers decodes).
std::optional<std::string> alphabet_to_bytes(std::string_view piece);

}  // namespace wl::tok
