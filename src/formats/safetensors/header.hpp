// A safetensors header as the file states it, every rule of the format checked: for readers that
// need what the catalogue leaves out (whether there is a __metadata__ at all; tensors of the dtypes
// weightloader cannot hold, which the Python drop-in serves itself).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/tensor.hpp"

namespace wl {

struct SafetensorsHeader {
  struct Tensor {
    std::string name;
    std::string dtype_name;      // as written: "F32", "C64", ...
    std::optional<DType> dtype;  // empty for a dtype weightloader cannot hold
    Shape shape;
    uint64_t offset = 0;  // absolute byte offset in the file
    uint64_t nbytes = 0;
  };
  std::vector<Tensor> tensors;                                 // by data offset
  std::optional<std::map<std::string, std::string>> metadata;  // nullopt: no __metadata__ (or null)
};

// Every rule of parse_safetensors_header but its last (refusing a dtype weightloader cannot hold),
// in the same order and with the same errors.
SafetensorsHeader parse_stated_safetensors_header(std::string_view header, uint64_t data_start, uint64_t file_size,
                                                  const std::string& file);
// The length prefix and the header of a source (never the data), checked as
// read_safetensors_catalogue checks them.
SafetensorsHeader read_stated_safetensors_header(const ByteSource& source);

}  // namespace wl
