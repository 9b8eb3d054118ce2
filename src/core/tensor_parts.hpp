// Reads of tensors assembled from pieces (TensorInfo::parts) as reads of the pieces, each into its
// block of the destination: rows blocks at an offset, column blocks with a destination stride.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// Checks an assembled tensor: pieces of its shape but along parts_dim, summing to it, themselves
// whole; a row order that keeps rows in their piece. InvalidArgument naming the tensor (and its
// first piece's file among `files`, its catalogue's) otherwise.
void check_parts(const TensorInfo& t, const std::vector<std::string>& files);

// `requests` with every request on an assembled tensor replaced by requests on its pieces (the
// part of the slice each holds). The pieces the new requests point to (with their row orders,
// or narrowed to the rows a slice keeps) live in `pieces`. Errors name files among `files`.
std::vector<ReadRequest> expand_parts(const std::vector<ReadRequest>& requests, const std::vector<std::string>& files,
                                      std::deque<TensorInfo>& pieces);

}  // namespace wl
