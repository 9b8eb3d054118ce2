#include "families/family.hpp"

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
