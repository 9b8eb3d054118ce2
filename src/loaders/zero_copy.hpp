// Tensors used as the checkpoint stores them, without a copy: load_into's zero_copy=true and
// safe_open's views.
#pragma once

#include <optional>

#include "weightloader/model.hpp"
#include "weightloader/source.hpp"

namespace wl {

// The one rule for using a tensor's stored bytes as they are, as `dtype` elements: the tensor is
// stored as `dtype`, raw, contiguous and in stored row order in a source that has a mapping (a
// local file, a memory region: WeightSource::view), and its first element is aligned to the
// element size. The read-only view of the mapping, or nullopt.
std::optional<TensorView> stored_view(const TensorInfo& tensor, const WeightSource& source, DType dtype);

// The view that can back the parameter: stored_view for its dtype, when the file holds exactly its
// element count; else nullopt.
std::optional<TensorView> parameter_view(const Parameter& param, const TensorInfo& tensor, const WeightSource& source);

// When parameter_view has one, replaces the parameter's memory by that read-only view and returns
// true. Otherwise leaves the parameter alone and returns false.
bool back_by_file_mapping(Parameter& param, const TensorInfo& tensor, const WeightSource& source);

}  // namespace wl
