// Whether a slice of a tensor can be read as a slice: the rule the I/O planner applies, answered
// before any read (a caller choosing which dimension to slice asks instead of trying).
#pragma once

#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

// True when a read of `slice` of `tensor` is planned as it is: raw or strided data, a slice on its
// encoding's block boundaries, or a tensor that is one block (decoded whole, then cut). False when
// the planner would refuse it (SliceOutOfBounds: it cuts through blocks). Throws SliceOutOfBounds
// naming the tensor (its file is its catalogue's to name) for a slice outside it.
WL_API bool reads_slice(const TensorInfo& tensor, const Slice& slice);

}  // namespace wl
