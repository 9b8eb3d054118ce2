// Sizes as people write them: shard sizes, memory budgets.
#pragma once

#include <cstdint>
#include <string>

#include "weightloader/export.hpp"

namespace wl {

// "5GB", "500MB", "2GiB", "1024" (bytes): decimal units as Hugging Face's parse_size_to_int
// reads them (KB = 1000), binary ones with an i (KiB = 1024). InvalidArgument otherwise.
WL_API uint64_t parse_byte_size(const std::string& text);

// max_host_memory: a size as parse_byte_size reads it, or a share of this machine's memory
// (MemTotal) written with a point, "0.5". InvalidArgument otherwise.
WL_API uint64_t parse_host_memory(const std::string& text);

// "1.50 GiB", "12.0 MiB", "3.0 KiB", "512 B".
WL_API std::string human_bytes(uint64_t bytes);

}  // namespace wl
