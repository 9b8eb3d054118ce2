// zero_copy=true: parameters backed by the checkpoint's file mapping instead of a copy.
#pragma once

#include "weightloader/model.hpp"
#include "weightloader/source.hpp"

namespace wl {

// When the file holds exactly the parameter's bytes (same dtype, raw, contiguous, in stored row
// order, same element count), replaces the parameter's memory by a read-only view of the file
// mapping and returns true. Otherwise leaves the parameter alone and returns false.
bool back_by_file_mapping(Parameter& param, const TensorInfo& tensor, const WeightSource& source);

}  // namespace wl
