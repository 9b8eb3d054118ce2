#include "loaders/builtin_loaders.hpp"

namespace wl {

void register_builtin_loaders(WeightLoaderRegistry& registry) {
  register_local_loader(registry);
  register_hf_loader(registry);
  register_custom_binary_loader(registry);
  register_meta_loader(registry);
}

}  // namespace wl
