// Shared by the fuzz targets: the fuzzer's bytes as a byte source, read in place (no copy, no file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "weightloader/byte_source.hpp"

namespace wl::fuzz {

// The bytes as a memory region. Nothing keeps them alive: libFuzzer's buffer outlives the call,
// and so must every source or opener made of it.
inline MemoryRegion region(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size, nullptr};
}

// The bytes as a byte source named "<fuzz>".
inline std::shared_ptr<ByteSource> source(const uint8_t* data, size_t size) {
  return memory_source("<fuzz>", region(data, size));
}

}  // namespace wl::fuzz
