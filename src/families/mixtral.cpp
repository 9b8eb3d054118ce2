#include "families/family.hpp"

namespace wl {

// Mixtral: Mistral with num_local_experts experts (block_sparse_moe), top-k renormalised.
extern const Family kMixtral{.model_type = "mixtral", .architecture = "MixtralForCausalLM", .window = Family::Window::All,
                             .experts = Family::Experts::Mixtral};

}  // namespace wl
