#include "loaders/stacked_experts_source.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

std::string model_type_of(const WeightSource& source) {
  const auto it = source.metadata().find("config.json");
  if (it == source.metadata().end()) return {};
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  return j.is_object() && j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
}

[[noreturn]] void refuse(const WeightSource& source, const TensorInfo& t, const std::string& why) {
  throw Error(ErrorCode::UnsupportedLayout, "a stack of experts cannot be presented per expert: " + why, source.file_of(t), t.name);
}

// Rows [part, part + 1) * rows / parts of slot `e` of `stack` [experts, rows, cols], as its own tensor.
TensorInfo expert_part(const TensorInfo& stack, uint64_t e, const ExpertStackPart& p) {
  TensorInfo t = stack;
  t.name = p.name;
  t.shape = {stack.shape[1] / p.parts, stack.shape[2]};
  t.nbytes = stack.nbytes / stack.shape[0] / p.parts;
  t.offset = stack.offset + e * (stack.nbytes / stack.shape[0]) + p.part * t.nbytes;
  return t;
}

}  // namespace

std::unique_ptr<WeightSource> with_experts_unstacked(std::unique_ptr<WeightSource> source) {
  const std::string model_type = model_type_of(*source);
  std::vector<TensorInfo> tensors;
  bool changed = false;
  for (const TensorInfo& t : source->tensors()) {
    const std::vector<ExpertStackPart> parts = unstacked_experts(model_type, t.name, 0);
    if (parts.empty()) {
      tensors.push_back(t);
      if (auto router = unstacked_router(model_type, t.name)) tensors.back().name = *router, changed = true;
      continue;
    }
    if (t.shape.size() != 3 || t.shape[0] == 0) refuse(*source, t, fmt::format("its shape {} is not [experts, rows, columns]", shape_to_string(t.shape)));
    if (t.decoder || !t.strides.empty() || !t.row_order.empty() || !t.parts.empty()) refuse(*source, t, "its values are not stored plainly in row-major order");
    if (t.shape[1] % parts.front().parts != 0)
      refuse(*source, t, fmt::format("its {} rows per expert do not halve into gate and up projections", t.shape[1]));
    for (uint64_t e = 0; e < t.shape[0]; ++e)
      for (const ExpertStackPart& p : unstacked_experts(model_type, t.name, e)) tensors.push_back(expert_part(t, e, p));
    changed = true;
  }
  if (!changed) return source;
  return std::make_unique<WeightSource>(source->format(), source->origin(), Catalogue{source->files(), std::move(tensors), source->metadata()},
                                        source->opener());
}

}  // namespace wl
