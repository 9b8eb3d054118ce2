#include "families/granitemoe_gguf.hpp"

namespace wl {

namespace {
// Granite-MoE's experts, and the shared MLP fused (gate rows, then up rows).
constexpr MlpNames kNames = [] {
  MlpNames names = kGraniteMoeMlp;
  names.shared = "shared_mlp", names.shared_gate_up = "input_linear", names.shared_down = "output_linear";
  return names;
}();
// Granite-MoE's, with the shared MLP (shared_mlp).
constexpr SplitTable kGraniteMoeSharedSplits[] = {splits::kEmbedding, splits::kAttention, splits::kMlp, splits::kRouter,
    splits::kExperts, splits::kSharedExpert, splits::kHead};
}  // namespace

// Granite-MoE-Shared (Granite 3.1 MoE): Granite-MoE (granitemoe.cpp) with an ungated MLP of
// shared_intermediate_size beside the experts (shared_mlp.input_linear: gate rows, then up rows;
// shared_mlp.output_linear); 0 (the default) is none. Written as llama.cpp's granitemoe, the shared
// input_linear split into ffn_gate_shexp and ffn_up_shexp (the engine reads either).
extern const Family kGraniteMoeShared{.model_type = "granitemoeshared", .architecture = "GraniteMoeSharedForCausalLM",
                                      .experts = Family::Experts::Mixtral, .multipliers = true, .shared_mlp = true,
                                      .stacked_experts = true, .mlp = kNames, .tensor_splits = kGraniteMoeSharedSplits, .gguf = kGraniteMoeGguf};

}  // namespace wl
