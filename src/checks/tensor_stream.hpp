// Reads whole checkpoints window by window through the I/O engine, so that the tools (diff,
// verify) look at every value with bounded memory: each window is a run of rows of one or more
// tensors, each converted to its group's dtype, at most `window_bytes` per side.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// A tensor of one side.
struct StreamTensor {
  const WeightSource* source = nullptr;
  const TensorInfo* tensor = nullptr;
};
// Tensors of the same shape, one per side (every group has as many), read as `dtype`.
struct StreamGroup {
  std::vector<StreamTensor> sides;
  DType dtype = DType::F32;
};

// A run of elements of group `group`: data[side] holds `count` values of the group's dtype,
// elements [first, first + count) of each side's tensor in row-major order.
struct StreamPiece {
  size_t group = 0;
  DType dtype = DType::F32;
  uint64_t first = 0;
  uint64_t count = 0;
  std::vector<const void*> data;
};

struct StreamOptions {
  uint64_t window_bytes = 16ull << 20;  // per side; a row larger than this is read alone
  IoOptions io;                         // io.progress sees the stored bytes of all sides
};

// Calls `visit` for every piece of every group, in order (each group's pieces in element order).
// Returns the bytes read from the sources.
uint64_t stream_tensors(const std::vector<StreamGroup>& groups, const StreamOptions& options,
                        const std::function<void(const StreamPiece&)>& visit);

}  // namespace wl
