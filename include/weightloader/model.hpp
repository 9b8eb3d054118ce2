// The caller's model: named parameters with their shape, dtype and memory.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weightloader/tensor.hpp"

namespace wl {

struct Parameter {
  std::string name;
  TensorView data;  // contiguous, writable (read-only when a zero_copy load backed it by the file); its shape and dtype are the parameter's
  const Shape& shape() const noexcept { return data.shape(); }
  DType dtype() const noexcept { return data.dtype(); }
};

class Model {
 public:
  // Declares a parameter backed by fresh heap memory. DuplicateParameter if the name is taken.
  Parameter& add_parameter(const std::string& name, Shape shape, DType dtype);
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
