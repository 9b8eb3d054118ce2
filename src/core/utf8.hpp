// Strict UTF-8 validation (what Rust's str::from_utf8 accepts): no overlong forms, no surrogates,
// nothing above U+10FFFF, no truncated sequences.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace wl::safetensors {

// Offset of the first byte that does not start a valid sequence; nullopt when all of `text` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);

}  // namespace wl::safetensors
