// name_map=auto: the mapping between the checkpoint's naming scheme and the model's that explains
// the most of the model's names, applied to the catalogue.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/report.hpp"
#include "weightloader/source.hpp"

namespace wl {

struct AutoNameMap {
  NameMatch match;
  // The checkpoint's tensors under the model's names (q/k rows reordered where the rotary layouts
  // differ), sharing `source`'s files; what to load with an identity name mapping.
  std::unique_ptr<WeightSource> renamed;
  std::vector<std::string> skipped;  // dropped by options.names or by the checkpoint's scheme
};

// options.names applies first: a tensor it renames onto a model name keeps that name. Fused model
// parameters (vLLM's qkv_proj, gate_up_proj) without shards get shards from the checkpoint's
// separate tensors. NameSchemeAmbiguous on a tie between different mappings; NameSchemePartial
// when options.strict and some model names stay unexplained; ConfigMissing when q/k rows must be
// reordered and the checkpoint says nothing of its head counts.
AutoNameMap auto_name_map(Model& model, const WeightSource& source, const LoadOptions& options);

// The canonical (Hugging Face) name of each tensor of `source` under its detected scheme; a name
// the scheme does not explain stays as it is, and one the scheme drops maps to nullopt.
std::vector<std::optional<std::string>> canonical_names(const WeightSource& source, const NameMapping& names);

}  // namespace wl
