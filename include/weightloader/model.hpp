// The caller's model: named parameters with their shape, dtype and memory.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weightloader/source.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

// A part of a parameter filled from (a slice of) one checkpoint tensor: how vLLM's stacked
// parameters (qkv_proj from q_proj, k_proj and v_proj) and tensor-parallel shards are declared.
// The slice's rows land at `row_offset` along the parameter's dim 0; the slice's shape must be the
// parameter's with dim 0 replaced by the slice's row count.
struct ParameterShard {
  std::string from;      // checkpoint tensor name, after the name mapping
  Slice slice;           // default: the whole tensor
  uint64_t row_offset = 0;
};

struct WL_API Parameter {
  std::string name;
  // Contiguous and writable (read-only when a zero_copy load backed it by the file); its shape and
  // dtype are the parameter's.
  TensorView data;
  // Empty: the parameter is the whole checkpoint tensor of its own name. Otherwise every shard
  // must be found for the parameter to count as loaded.
  std::vector<ParameterShard> shards;
  const Shape& shape() const noexcept { return data.shape(); }
  DType dtype() const noexcept { return data.dtype(); }
};

class WL_API Model {
 public:
  // Declares a parameter backed by fresh heap memory. DuplicateParameter if the name is taken.
  Parameter& add_parameter(const std::string& name, Shape shape, DType dtype);
  // Declares a parameter filled from slices of other checkpoint tensors (see ParameterShard).
  Parameter& add_parameter(const std::string& name, Shape shape, DType dtype, std::vector<ParameterShard> shards);
  // Declares a parameter backed by the caller's memory (contiguous and writable).
  Parameter& add_parameter(const std::string& name, TensorView memory);

  const std::vector<Parameter>& parameters() const noexcept { return params_; }
  std::vector<Parameter>& parameters() noexcept { return params_; }
  Parameter* find(std::string_view name);
  const Parameter* find(std::string_view name) const;
  uint64_t total_bytes() const;

 private:
  std::vector<Parameter> params_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace wl
