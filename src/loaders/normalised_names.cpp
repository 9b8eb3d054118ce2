#include "weightloader/checkpoint_names.hpp"

#include "weightloader/formats/gguf.hpp"

namespace wl {

std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping) {
  std::vector<TensorInfo> tensors;
  tensors.reserve(source.tensors().size());
  for (const TensorInfo& t : source.tensors()) {
    std::string name = t.name;
    if (source.format() == "gguf")  // a catalogue read with raw names; HF names pass unchanged
      if (auto hf = gguf_llama_name_to_hf(name)) name = *hf;
    const std::optional<std::string> mapped = mapping.map(name);
    if (!mapped) continue;  // dropped
    tensors.push_back(t);
    tensors.back().name = *mapped;
  }
  return std::make_unique<WeightSource>(source.format(), source.origin(), std::move(tensors), source.metadata(),
                                        source.opener());
}

}  // namespace wl
