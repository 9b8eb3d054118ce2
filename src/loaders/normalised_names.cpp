// The tools' normalised names (a GGUF's are Hugging Face's already: src/loaders/gguf_hf_names.cpp).
#include "weightloader/checkpoint_names.hpp"

namespace wl {

std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping) {
  std::vector<TensorInfo> tensors;
  tensors.reserve(source.tensors().size());
  for (const TensorInfo& t : source.tensors()) {
    const std::optional<std::string> mapped = mapping.map(t.name);
    if (!mapped) continue;  // dropped
    tensors.push_back(t);
    tensors.back().name = *mapped;
  }
  return std::make_unique<WeightSource>(source.format(), source.origin(), Catalogue{source.files(), std::move(tensors), source.metadata()},
                                        source.opener());
}

}  // namespace wl
