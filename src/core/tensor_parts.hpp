// Reads of tensors assembled from pieces (TensorInfo::parts) as reads of the pieces, each into its
// block of the destination: rows blocks at an offset, column blocks with a destination stride.
#pragma once

#include <deque>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// Checks an assembled tensor: pieces of its shape but along parts_dim, summing to it, themselves
// whole; a row order that keeps rows in their piece. InvalidArgument naming the tensor otherwise.
void check_parts(const TensorInfo& t);

// `requests` with every request on an assembled tensor replaced by requests on its pieces (the
// part of the slice each holds). The pieces the new requests point to (with their row orders,
// or narrowed to the rows a slice keeps) live in `pieces`.
std::vector<ReadRequest> expand_parts(const std::vector<ReadRequest>& requests, std::deque<TensorInfo>& pieces);

}  // namespace wl
