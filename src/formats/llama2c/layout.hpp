// Where each array of a llama2.c checkpoint lies: the stored arrays in file order, with their
// Hugging Face names and shapes. The reader and the writer both walk this one list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/formats/llama2c.hpp"
#include "weightloader/tensor.hpp"

namespace wl::llama2c {

enum class Stored {
  F32,      // float32 values
  Q8,       // v2: int8 values, then one float32 scale per group
  RopeCos,  // v0's unused rotary tables [seq_len, head_size / 2]
  RopeSin,
};

struct Entry {
  std::string name;           // Hugging Face name; empty for the rotary tables
  Shape shape;
  Stored stored = Stored::F32;
  uint64_t rotary_heads = 0;  // q/k: heads whose rows are stored interleaved; 0 for the others
};

// Every stored array of a checkpoint with header `h`, in file order, after the header.
std::vector<Entry> layout(const Llama2cHeader& h);

// Bytes an entry occupies in the file.
uint64_t stored_bytes(const Entry& e, const Llama2cHeader& h);

// The exact size of a file with header `h` (header included). `h` must be valid.
uint64_t file_size(const Llama2cHeader& h);

// The row order that presents an interleaved q/k matrix of `heads` heads of `head_size` rows in
// Hugging Face's layout (the naming module's rotary_row_order).
std::vector<uint64_t> hf_row_order(uint64_t heads, uint64_t head_size);

}  // namespace wl::llama2c
