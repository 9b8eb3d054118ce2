#include "families/family.hpp"

namespace wl {

namespace {
// Granite-MoE's experts, and the shared MLP fused (gate rows, then up rows).
constexpr MlpNames kNames = [] {
  MlpNames names = kGraniteMoeMlp;
  names.shared = "shared_mlp", names.shared_gate_up = "input_linear", names.shared_down = "output_linear";
  return names;
}();
}  // namespace

// Granite-MoE-Shared (Granite 3.1 MoE): Granite-MoE (granitemoe.cpp) with an ungated MLP of
// shared_intermediate_size beside the experts (shared_mlp.input_linear: gate rows, then up rows;
// shared_mlp.output_linear); 0 (the default) is none. Not written as GGUF: llama.cpp's granitemoe
// keeps the shared MLP as two tensors (ffn_gate_shexp, ffn_up_shexp), which the engine reads fused only.
extern const Family kGraniteMoeShared{.model_type = "granitemoeshared", .architecture = "GraniteMoeSharedForCausalLM",
                                      .experts = Family::Experts::Mixtral, .multipliers = true, .shared_mlp = true,
                                      .stacked_experts = true, .mlp = kNames};

}  // namespace wl
