#include "weightloader/model.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

Parameter& Model::add_parameter(const std::string& name, Shape shape, DType dtype) {
  return add_parameter(name, TensorView::empty(dtype, std::move(shape)));
}

Parameter& Model::add_parameter(const std::string& name, Shape shape, DType dtype, std::vector<ParameterShard> shards) {
  Parameter& p = add_parameter(name, std::move(shape), dtype);
  p.shards = std::move(shards);
  return p;
}

Parameter& Model::add_parameter(const std::string& name, TensorView memory) {
  if (!memory.defined() || !memory.is_contiguous() || !memory.storage()->writable())
    throw Error(ErrorCode::InvalidArgument, "a parameter's memory must be contiguous and writable", {}, name);
  if (index_.count(name)) throw Error(ErrorCode::DuplicateParameter, "the model already declares this parameter", {}, name);
  index_.emplace(name, params_.size());
  params_.push_back(Parameter{name, std::move(memory), {}});
  return params_.back();
}

Parameter* Model::find(std::string_view name) {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &params_[it->second];
}

const Parameter* Model::find(std::string_view name) const { return const_cast<Model*>(this)->find(name); }

uint64_t Model::total_bytes() const {
  uint64_t sum = 0;
  for (const Parameter& p : params_) sum += p.data.nbytes();
  return sum;
}

}  // namespace wl
