// transformers 5's stacked experts and the per-expert names of each family's earlier checkpoints.
#include <array>

#include <fmt/format.h>

#include "core/layer_name.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

struct Family {
  std::string_view model_type;
  std::string_view experts;          // the per-expert layer stem before the expert's number
  std::string_view gate, up, down;   // after it
  std::string_view router;           // the earlier router stem (transformers 5: mlp.gate)
};

constexpr std::array<Family, 2> kFamilies{{
    {"mixtral", "block_sparse_moe.experts.", "w1", "w3", "w2", "block_sparse_moe.gate"},
    {"qwen2_moe", "mlp.experts.", "gate_proj", "up_proj", "down_proj", "mlp.gate"},
}};

const Family* family(std::string_view model_type) {
  for (const Family& f : kFamilies)
    if (f.model_type == model_type) return &f;
  return nullptr;
}

// A transformers 5 Mixtral keeps its experts under mlp; its earlier checkpoints under block_sparse_moe.
std::vector<std::string> earlier_modules(std::string_view module) {
  std::vector<std::string> out{std::string(module)};
  if (module.ends_with(".mlp")) out.push_back(std::string(module.substr(0, module.size() - 4)) + ".block_sparse_moe");
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
  if (layer->second == "mlp.experts.gate_up_proj") return {{name(f->gate), 0, 2}, {name(f->up), 1, 2}};
  if (layer->second == "mlp.experts.down_proj") return {{name(f->down), 0, 1}};
  return {};
}

std::vector<std::vector<std::string>> fused_moe_parts(std::string_view param, uint64_t expert) {
  const size_t at = param.rfind(".experts.");
  if (at == std::string_view::npos) return {};
  const std::string_view leaf = param.substr(at + 9);
  const bool gate_up = leaf == "w13_weight" || leaf == "gate_up_proj", down = leaf == "w2_weight" || leaf == "down_proj";
  if (!gate_up && !down) return {};
  std::vector<std::vector<std::string>> namings;
  for (const std::string& module : earlier_modules(param.substr(0, at))) {
    auto name = [&](std::string_view projection) { return fmt::format("{}.experts.{}.{}.weight", module, expert, projection); };
    if (gate_up) namings.push_back({name("w1"), name("w3")}), namings.push_back({name("gate_proj"), name("up_proj")});
    if (down) namings.push_back({name("w2")}), namings.push_back({name("down_proj")});
  }
  return namings;
}

std::optional<std::string> earlier_router_name(std::string_view param) {
  if (!param.ends_with(".mlp.gate.weight")) return std::nullopt;
  return std::string(param.substr(0, param.size() - 16)) + ".block_sparse_moe.gate.weight";
}


std::optional<std::string> unstacked_router(std::string_view model_type, std::string_view stored) {
  const Family* f = family(model_type);
  const auto layer = split_layer_name(stored, "model.layers.");
  if (!f || !layer || layer->second != "mlp.gate.weight" || f->router == "mlp.gate") return std::nullopt;
  return fmt::format("model.layers.{}.{}.weight", layer->first, f->router);
}

}  // namespace wl
