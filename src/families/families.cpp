#include "families/family.hpp"

#include <utility>

namespace wl {

extern const Family kLlama, kMistral, kMixtral, kQwen2, kQwen2Moe, kQwen3, kQwen3Moe, kGemma, kGemma2, kGemma3Text,
    kPhi3, kGranite, kSmolLM3, kOlmo2, kNemotronNas, kDeci, kDeepseekV2, kDeepseekV3, kGptOss, kGlm4, kGraniteMoe, kGraniteMoeShared,
    kLlama4Text;

const std::vector<const Family*>& families() {
  static const std::vector<const Family*> all{&kLlama, &kMistral, &kMixtral, &kQwen2, &kQwen2Moe, &kQwen3, &kQwen3Moe,
                                              &kGemma, &kGemma2, &kGemma3Text, &kPhi3, &kGranite, &kSmolLM3, &kOlmo2,
                                              &kNemotronNas, &kDeci, &kDeepseekV2, &kDeepseekV3, &kGptOss, &kGlm4,
                                              &kGraniteMoe, &kGraniteMoeShared, &kLlama4Text};
  return all;
}

const Family* family_by_type(std::string_view model_type) {
  for (const Family* f : families())
    if (f->model_type == model_type) return f;
  return nullptr;
}

const MlpNames& mlp_names(std::string_view model_type) {
  static const MlpNames kLlamas{};
  const Family* f = family_by_type(model_type);
  return f ? f->mlp : kLlamas;
}

std::span<const SplitTable> tensor_splits(std::string_view model_type) {
  const Family* f = family_by_type(model_type);
  return (f ? f : family_by_type("llama"))->tensor_splits;
}

std::optional<std::string> split_name(std::string_view name, const MlpNames& names) {
  if (!name.starts_with('{')) return std::string(name);
  static constexpr std::pair<std::string_view, std::string_view MlpNames::*> kFields[] = {
      {"router", &MlpNames::router}, {"gate", &MlpNames::gate}, {"up", &MlpNames::up}, {"down", &MlpNames::down},
      {"shared_gate_up", &MlpNames::shared_gate_up}, {"shared_down", &MlpNames::shared_down}, {"shared_gate", &MlpNames::shared_gate}};
  const size_t close = name.find('}');
  if (close == std::string_view::npos) return std::nullopt;
  for (const auto& [field, member] : kFields)
    if (name.substr(1, close - 1) == field) return std::string(names.*member) + std::string(name.substr(close + 1));
  return std::nullopt;
}

const Family* family_by_architecture(std::string_view architecture) {
  for (const Family* f : families())
    if (f->architecture == architecture) return f;
  return nullptr;
}

const Family* family_by_multimodal_type(std::string_view model_type) {
  for (const Family* f : families())
    if (!f->multimodal.model_type.empty() && f->multimodal.model_type == model_type) return f;
  return nullptr;
}

const Family* family_by_gguf_architecture(std::string_view architecture, bool experts, bool shared_mlp) {
  const Family* best = nullptr;
  int best_fit = -1;
  for (const Family* f : families()) {
    if (f->gguf.name.empty() || f->gguf.name != architecture) continue;
    const int fit = 2 * ((f->experts != Family::Experts::None) == experts) + (f->shared_mlp == shared_mlp);
    if (fit > best_fit) {
      best = f;
      best_fit = fit;
    }
  }
  return best;
}

}  // namespace wl
