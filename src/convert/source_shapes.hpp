// The shapes a conversion reads from a source's tensors when its configuration does not say them.
#pragma once

#include <string>

#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {

inline Shape shape_of(const WeightSource& s, const std::string& name) {
  const TensorInfo* t = s.find(name);
  if (!t)
    throw Error(ErrorCode::TensorNotFound, "a Llama checkpoint in Hugging Face names is needed for this conversion",
                s.origin(), name);
  return t->shape;
}

}  // namespace wl
