// transformers 5's stacked experts and the per-expert names of each family's earlier checkpoints
// (each family's MlpNames: src/families/).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/layer_name.hpp"
#include "families/family.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

// The families whose experts transformers 5 stacks and their earlier checkpoints name one by one
// (their MlpNames' stacks), in the order they are listed.
std::vector<const MlpNames*> per_expert_families() {
  std::vector<const MlpNames*> out;
  for (const Family* f : families())
    if (!f->mlp.stacks.gate_up[0].empty()) out.push_back(&f->mlp);
  return out;
}

bool listed(const std::array<std::string_view, 2>& names, std::string_view name) {
  return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
}

const MlpNames* family(std::string_view model_type) {
  const Family* f = family_by_type(model_type);
  return f && !f->mlp.stacks.gate_up[0].empty() ? &f->mlp : nullptr;
}

// The module a family's earlier checkpoints keep a layer's experts under: the module's own, and
// for a module that transformers 5 names mlp, the family's earlier one (Mixtral: block_sparse_moe).
std::vector<std::string> earlier_modules(std::string_view module, const MlpNames& f) {
  std::vector<std::string> out{std::string(module)};
  const std::string_view earlier = f.moe;
  if (module.ends_with(".mlp") && earlier != "mlp")
    out.push_back(fmt::format("{}.{}", module.substr(0, module.size() - 4), earlier));
  return out;
}

}  // namespace

std::vector<ExpertStackPart> unstacked_experts(std::string_view model_type, std::string_view stored, uint64_t expert) {
  const MlpNames* f = family(model_type);
  const auto layer = split_layer_name(stored, "model.layers.");
  if (!f || !layer) return {};
  auto name = [&](std::string_view leaf) {
    return fmt::format("model.layers.{}.{}.experts.{}.{}.weight", layer->first, f->moe, expert, leaf);
  };
  if (listed(f->stacks.gate_up, layer->second)) return {{name(f->gate), 0, 2}, {name(f->up), 1, 2}};
  if (listed(f->stacks.down, layer->second)) return {{name(f->down), 0, 1}};
  return {};
}

std::vector<std::vector<std::string>> fused_moe_parts(std::string_view param, uint64_t expert) {
  const size_t at = param.rfind(".experts.");
  if (at == std::string_view::npos) return {};
  const std::string_view leaf = param.substr(at + 9);
  const bool gate_up = leaf == "w13_weight" || leaf == "gate_up_proj", down = leaf == "w2_weight" || leaf == "down_proj";
  if (!gate_up && !down) return {};
  std::vector<std::vector<std::string>> namings;
  for (const MlpNames* f : per_expert_families())
    for (const std::string& module : earlier_modules(param.substr(0, at), *f)) {
      auto name = [&](std::string_view projection) { return fmt::format("{}.experts.{}.{}.weight", module, expert, projection); };
      std::vector<std::string> naming = gate_up ? std::vector<std::string>{name(f->gate), name(f->up)} : std::vector<std::string>{name(f->down)};
      if (std::find(namings.begin(), namings.end(), naming) == namings.end()) namings.push_back(std::move(naming));  // families share names
    }
  return namings;
}

std::optional<std::string> earlier_router_name(std::string_view param) {
  constexpr std::string_view kRouter = ".mlp.gate.weight";
  if (!param.ends_with(kRouter)) return std::nullopt;
  for (const MlpNames* f : per_expert_families())
    if (f->moe != "mlp" || f->router != "gate") return fmt::format("{}.{}.{}.weight", param.substr(0, param.size() - kRouter.size()), f->moe, f->router);
  return std::nullopt;
}

std::optional<std::string> unstacked_router(std::string_view model_type, std::string_view stored) {
  const MlpNames* f = family(model_type);
  const auto layer = split_layer_name(stored, "model.layers.");
  const std::string router = f ? fmt::format("{}.{}", f->moe, f->router) : "";
  if (!f || !layer || !listed(f->stacks.router, layer->second) || layer->second == router + ".weight") return std::nullopt;
  return fmt::format("model.layers.{}.{}.weight", layer->first, router);
}

}  // namespace wl
