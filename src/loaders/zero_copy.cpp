#include "loaders/zero_copy.hpp"

namespace wl {

bool back_by_file_mapping(Parameter& param, const TensorInfo& tensor, const WeightSource& source) {
  if (tensor.dtype != param.dtype() || tensor.numel() != shape_numel(param.shape())) return false;
  std::optional<TensorView> view = source.view(tensor);  // nullopt unless raw, contiguous, stored order
  if (!view) return false;
  param.data = view->reshaped(param.shape());
  return true;
}

}  // namespace wl
