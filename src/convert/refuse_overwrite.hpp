// Where a conversion writes: never over its input (the atomic output itself: core/atomic_output.hpp).
#pragma once

#include <string>

#include "weightloader/source.hpp"

namespace wl {

// InvalidArgument when `out` (or, for a directory, any of `out_files` inside it) is the source's
// origin or one of the files its tensors come from: the same path, or the same inode.
void refuse_overwriting_input(const WeightSource& source, const std::string& out,
                              const std::vector<std::string>& out_files = {});

}  // namespace wl
