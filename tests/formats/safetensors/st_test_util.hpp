// Helpers for the safetensors tests: hand-made files and reading tensor values back.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/source.hpp"

namespace wl::test {

// A safetensors file's bytes: the little-endian length of `header`, `header`, then `data`.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = {}) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(n & 0xff);
  return out + header + data;
}

// Writes such a file into `dir` and returns its path.
inline std::string make_safetensors(const TempDir& dir, const std::string& header, const std::string& data = {},
                                    const std::string& name = "model.safetensors") {
  const std::string path = dir.file(name);
  write_bytes(path, safetensors_bytes(header, data));
  return path;
}

// The stored bytes of one tensor, read through the generic WeightSource.
inline std::vector<std::byte> tensor_bytes(const Catalogue& catalogue, const std::string& name) {
  const WeightSource source("safetensors", "test", catalogue);
  const TensorInfo& info = source.at(name);
  std::vector<std::byte> out(info.nbytes);
  source.read(info, info.dtype, out.data());
  return out;
}

template <typename T>
std::vector<T> tensor_values(const Catalogue& catalogue, const std::string& name) {
  const std::vector<std::byte> bytes = tensor_bytes(catalogue, name);
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace wl::test
