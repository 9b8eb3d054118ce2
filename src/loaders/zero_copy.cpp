#include "loaders/zero_copy.hpp"

#include <cstdint>

namespace wl {

std::optional<TensorView> stored_view(const TensorInfo& tensor, const WeightSource& source, DType dtype) {
  if (tensor.dtype != dtype) return std::nullopt;
  std::optional<TensorView> view = source.view(tensor);  // nullopt unless raw, contiguous, stored order, mapped
  // Misaligned elements cannot be typed memory (undefined behaviour in C++, refused by some kernels).
  if (!view || reinterpret_cast<uintptr_t>(view->raw()) % dtype_size(dtype) != 0) return std::nullopt;
  return view;
}

std::optional<TensorView> parameter_view(const Parameter& param, const TensorInfo& tensor, const WeightSource& source) {
  if (tensor.numel() != shape_numel(param.shape())) return std::nullopt;
  return stored_view(tensor, source, param.dtype());
}

bool back_by_file_mapping(Parameter& param, const TensorInfo& tensor, const WeightSource& source) {
  std::optional<TensorView> view = parameter_view(param, tensor, source);
  if (!view) return false;
  param.data = view->reshaped(param.shape());
  return true;
}

}  // namespace wl
