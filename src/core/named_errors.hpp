// Errors about a tensor, named by the code that knows its file. A tensor names its file by index
// (TensorInfo::source), so the engine's pure parts (the slice rule, the planner, assembled
// tensors) name the tensor alone, and whoever resolved the index adds the file's name.
#pragma once

#include <string>
#include <utility>

#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {

// The shape of `slice` of `tensor`: SliceOutOfBounds naming the tensor (no file) if it does not fit.
Shape slice_shape_of(const TensorInfo& tensor, const Slice& slice);

// `e` naming `file`, unless it names one already.
Error in_file(const Error& e, const std::string& file);

// What `f` returns; an Error it throws is thrown again naming `file` (in_file).
template <class F>
decltype(auto) naming_file(const std::string& file, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error& e) {
    throw in_file(e, file);
  }
}

}  // namespace wl
