// transformers 5's stacked experts and the per-expert names of each family's earlier checkpoints.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/layer_name.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

// The stacks' and the router's names as stored (layer stems with their leaf; empty: none).
struct Stored {
  std::array<std::string_view, 2> gate_up, down, router;
};
// transformers 5's: mlp.experts.gate_up_proj / down_proj, the router as mlp.gate.
constexpr Stored kTransformers5{{"mlp.experts.gate_up_proj"}, {"mlp.experts.down_proj"}, {"mlp.gate.weight"}};
// Granite-MoE's checkpoints (block_sparse_moe.input_linear / output_linear, router.layer) and its
// transformers 5 modules' own names (experts.gate_up_proj / down_proj, router).
constexpr Stored kGraniteMoe{{"block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj"},
                             {"block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.down_proj"},
                             {"block_sparse_moe.router.layer.weight", "block_sparse_moe.router.weight"}};

struct Family {
  std::string_view model_type;
  std::string_view experts;          // the per-expert layer stem before the expert's number
  std::string_view gate, up, down;   // after it
  std::string_view router;           // the earlier router stem (transformers 5: mlp.gate)
  Stored stored = kTransformers5;
};

constexpr std::array<Family, 6> kFamilies{{
    {"mixtral", "block_sparse_moe.experts.", "w1", "w3", "w2", "block_sparse_moe.gate"},
    {"qwen2_moe", "mlp.experts.", "gate_proj", "up_proj", "down_proj", "mlp.gate"},
    {"deepseek_v2", "mlp.experts.", "gate_proj", "up_proj", "down_proj", "mlp.gate"},
    {"deepseek_v3", "mlp.experts.", "gate_proj", "up_proj", "down_proj", "mlp.gate"},
    {"granitemoe", "block_sparse_moe.experts.", "w1", "w3", "w2", "block_sparse_moe.gate", kGraniteMoe},
    {"granitemoeshared", "block_sparse_moe.experts.", "w1", "w3", "w2", "block_sparse_moe.gate", kGraniteMoe},
}};

bool listed(const std::array<std::string_view, 2>& names, std::string_view name) {
  return !name.empty() && std::find(names.begin(), names.end(), name) != names.end();
}

const Family* family(std::string_view model_type) {
  for (const Family& f : kFamilies)
    if (f.model_type == model_type) return &f;
  return nullptr;
}

// The module a family's earlier checkpoints keep a layer's experts under: the module's own, and
// for a module that transformers 5 names mlp, the family's earlier one (Mixtral: block_sparse_moe).
std::vector<std::string> earlier_modules(std::string_view module, const Family& f) {
  std::vector<std::string> out{std::string(module)};
  const std::string_view earlier = f.experts.substr(0, f.experts.find('.'));
  if (module.ends_with(".mlp") && earlier != "mlp")
    out.push_back(fmt::format("{}.{}", module.substr(0, module.size() - 4), earlier));
  return out;
}

}  // namespace

std::vector<ExpertStackPart> unstacked_experts(std::string_view model_type, std::string_view stored, uint64_t expert) {
  const Family* f = family(model_type);
  const auto layer = split_layer_name(stored, "model.layers.");
  if (!f || !layer) return {};
  auto name = [&](std::string_view leaf) {
    return fmt::format("model.layers.{}.{}{}.{}.weight", layer->first, f->experts, expert, leaf);
  };
  if (listed(f->stored.gate_up, layer->second)) return {{name(f->gate), 0, 2}, {name(f->up), 1, 2}};
  if (listed(f->stored.down, layer->second)) return {{name(f->down), 0, 1}};
  return {};
}

std::vector<std::vector<std::string>> fused_moe_parts(std::string_view param, uint64_t expert) {
  const size_t at = param.rfind(".experts.");
  if (at == std::string_view::npos) return {};
  const std::string_view leaf = param.substr(at + 9);
  const bool gate_up = leaf == "w13_weight" || leaf == "gate_up_proj", down = leaf == "w2_weight" || leaf == "down_proj";
  if (!gate_up && !down) return {};
  std::vector<std::vector<std::string>> namings;
  for (const Family& f : kFamilies)
    for (const std::string& module : earlier_modules(param.substr(0, at), f)) {
      auto name = [&](std::string_view projection) { return fmt::format("{}.experts.{}.{}.weight", module, expert, projection); };
      std::vector<std::string> naming = gate_up ? std::vector<std::string>{name(f.gate), name(f.up)} : std::vector<std::string>{name(f.down)};
      if (std::find(namings.begin(), namings.end(), naming) == namings.end()) namings.push_back(std::move(naming));  // families share names
    }
  return namings;
}

std::optional<std::string> earlier_router_name(std::string_view param) {
  constexpr std::string_view kRouter = ".mlp.gate.weight";
  if (!param.ends_with(kRouter)) return std::nullopt;
  for (const Family& f : kFamilies)
    if (f.router != "mlp.gate") return fmt::format("{}.{}.weight", param.substr(0, param.size() - kRouter.size()), f.router);
  return std::nullopt;
}

std::optional<std::string> unstacked_router(std::string_view model_type, std::string_view stored) {
  const Family* f = family(model_type);
  const auto layer = split_layer_name(stored, "model.layers.");
  if (!f || !layer || !listed(f->stored.router, layer->second) || layer->second == fmt::format("{}.weight", f->router)) return std::nullopt;
  return fmt::format("model.layers.{}.{}.weight", layer->first, f->router);
}

}  // namespace wl
