// One part of a tensor that a naming scheme stores split (StoredParts, src/naming): llama.cpp's
// converter splits Granite-MoE-Shared's shared input_linear into row blocks, and gpt-oss's and
// Llama 4's transformers 5 expert stacks into gate and up columns (interleaved, or halves), each
// transposed into nn.Linear's [out, in], as it writes them to GGUF.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "weightloader/name_schemes.hpp"
#include "weightloader/tensor.hpp"

namespace wl {

// The shape part `index` of `how.names.size()` has, of a tensor of `shape`. ShapeMismatch (naming
// `origin` and `tensor`) when the split dim does not divide into equal parts or a transposed part is
// not at least a matrix.
Shape stored_part_shape(const Shape& shape, const StoredParts& how, const std::string& origin, const std::string& tensor);

// The part's values from `whole` (F32, of a shape stored_part_shape accepts): the rows or columns
// the part holds, its last two dims swapped where `how.transposed`.
TensorView stored_part(const TensorView& whole, const StoredParts& how, size_t index);

// Which of the split dim's `part_count * n` source rows (or columns) the part's k-th is: every n-th
// from `index` when the parts are interleaved, else the index-th block of `part_count`.
inline uint64_t part_source(const StoredParts& how, size_t index, uint64_t k, uint64_t part_count) {
  return how.interleaved ? k * std::max<uint64_t>(how.names.size(), 1) + index : index * part_count + k;
}

// Whether the split can be applied to each slot along dim 0 in turn (one expert of a stack in memory
// at a time): it keeps dim 0, and leaves a slot the dims it works on.
bool splits_by_slot(const Shape& shape, const StoredParts& how);

}  // namespace wl
