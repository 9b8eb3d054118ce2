#include "families/family.hpp"

namespace wl {

namespace {
// llama.cpp's "llama" with experts: each projection's experts stacked.
constexpr GgufArchitecture::Stack kMixtralGgufStacks[] = {{"block_sparse_moe.experts.", "w1", "ffn_gate_exps"},
                                                          {"block_sparse_moe.experts.", "w3", "ffn_up_exps"},
                                                          {"block_sparse_moe.experts.", "w2", "ffn_down_exps"}};
}  // namespace

// Mixtral: Mistral with num_local_experts experts (block_sparse_moe), top-k renormalised.
extern const Family kMixtral{.model_type = "mixtral", .architecture = "MixtralForCausalLM", .window = Family::Window::All,
                             .experts = Family::Experts::Mixtral, .mlp = kBlockSparseMoe,
                             .gguf = {.name = "llama", .interleaved_rotary = true, .stacks = kMixtralGgufStacks}};

}  // namespace wl
