// The llama2.c header: its bytes, its validation, and the file size it implies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "weightloader/formats/llama2c.hpp"

namespace wl::llama2c {

inline constexpr uint64_t kLegacyHeaderBytes = 28;  // v0: the 7 int32 alone
inline constexpr uint64_t kHeaderBytes = 256;       // v1 and v2

uint64_t header_bytes(const Llama2cHeader& h);

// Checks the version, each field against its bounds, the heads and (v2) the group size.
// `file` names the file in messages.
void validate(const Llama2cHeader& h, const std::string& file);

// Parses the header from `head`, the file's first min(256, file_size) bytes, validates it, and
// checks that the file is exactly as long as the header implies.
Llama2cHeader parse_header(std::span<const std::byte> head, uint64_t file_size, const std::string& file);

// The header's bytes as llama2.c's export writes them.
std::vector<std::byte> encode_header(const Llama2cHeader& h);

// "v0, dim 64, hidden_dim 172, ..., shared classifier" for messages.
std::string describe(const Llama2cHeader& h);

}  // namespace wl::llama2c
