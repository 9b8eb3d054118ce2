#include "engine/rank_load_options.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "families/family.hpp"
#include "model/language_model_names.hpp"

namespace wl {

void drop_unused_by_engine(NameMapping& names, const LlamaConfig& config) {
  names.drop(R"(.*rotary_emb\.inv_freq)");
  if (!config.multimodal.empty()) keep_language_model(names);
  if (config.tie_word_embeddings) names.drop(R"((.*\.)?lm_head\.weight)");
  std::vector<std::string> predicting;  // DeepSeek-V3's prediction layers, after the last
  for (uint64_t l = config.num_layers; l < config.num_layers + config.prediction_layers; ++l) predicting.push_back(std::to_string(l));
  if (!predicting.empty()) names.drop(fmt::format(R"(model\.layers\.({})\..*)", fmt::join(predicting, "|")));
  // A shared expert of no units (Qwen2-MoE's shared_expert_intermediate_size 0, DeepSeek's n_shared_experts
  // 0): transformers stores its empty projections (and Qwen2-MoE its gate), which add nothing.
  const MlpNames& mlp = mlp_names(config.architecture);
  auto escaped = [](std::string_view name) {
    std::string out;
    for (const char ch : name) out += ch == '.' ? std::string(R"(\.)") : std::string(1, ch);
    return out;
  };
  if (config.moe.num_experts && !config.moe.shared_expert_intermediate_size && !mlp.shared.empty()) {
    names.drop(fmt::format(R"(model\.layers\.[0-9]+\.{}\..*)", escaped(mlp.shared)));
    if (!mlp.shared_gate.empty()) names.drop(fmt::format(R"(model\.layers\.[0-9]+\.{}\.{}\.weight)", escaped(mlp.moe), escaped(mlp.shared_gate)));
  }
}

LoadOptions rank_load_options(LoadOptions base, const LlamaConfig& config, const RankPartition& part) {
  // Row-parallel biases are added once, after the all-reduce: rank 0's, but for the experts' down
  // biases under expert parallelism (stacked, or one per expert as gpt-oss's GGUF has them): each
  // rank's own experts' (the tensor splits' RankZero placement).
  const bool experts_whole = part.experts != config.moe.num_experts;
  if (part.rank > 0) {
    base.names.drop(experts_whole ? R"((?!.*\.experts\.).*\.(o_proj|down_proj)\.bias)" : R"(.*\.(o_proj|down_proj)\.bias)");
    if (!experts_whole) base.names.drop(R"(.*\.experts\.down_proj_bias)");
  }
  std::vector<std::string> others;
  for (uint64_t e = 0; e < config.moe.num_experts; ++e)
    if (e < part.expert0 || e >= part.expert0 + part.experts) others.push_back(std::to_string(e));
  if (!others.empty()) base.names.drop(fmt::format(R"(.*\.experts\.({})\..*)", fmt::join(others, "|")));
  return base;
}

}  // namespace wl
