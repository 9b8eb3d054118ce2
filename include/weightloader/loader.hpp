// The loader interface, in the terms of vLLM's BaseWeightLoader.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "weightloader/byte_source.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/context.hpp"
#include "weightloader/export.hpp"
#include "weightloader/model.hpp"
#include "weightloader/name_mapping.hpp"
#include "weightloader/report.hpp"
#include "weightloader/source.hpp"

namespace wl {

struct LoadOptions {
  NameMapping names;
  // name_map=auto: recognise the checkpoint's naming scheme and the model's (Hugging Face, Meta,
  // torchtune, GGUF, vLLM's fused parameters, under wrapper prefixes) and map one onto the other,
  // converting q/k rows between rotary layouts. `names` still applies first and wins where it
  // maps a tensor onto a parameter. Ambiguous or (strict) partial matches are errors.
  bool auto_names = false;
  bool strict = true;          // missing or unexpected names are an error
  bool allow_reshape = false;  // accept a shape with the same element count
  // A parameter whose exact bytes the file holds (same dtype, raw, contiguous) gets a read-only
  // view of the file mapping instead of a copy; the file must not change while the model lives.
  bool zero_copy = false;
  IoOptions io;  // its `devices` are the context's unless set
  // The host memory a load may use at most, parameters on the host included; 0: unbounded. Lowers
  // io's staging and threads to fit, and refuses (OverBudget) before reading when even the least
  // does not fit (plan_cost).
  uint64_t max_host_memory = 0;
  // Where get_weights opens names and which formats it detects, where a model id missing from the
  // cache is downloaded from, which devices parameters can be on. A registry's create() gives its
  // loaders the registry's context.
  Context context;
};

class WL_API WeightLoader {
 public:
  virtual ~WeightLoader() = default;

  // Where to read: a lazy catalogue of the checkpoint; nothing is read yet. Under `call`, the
  // options of this call: where names are opened and formats detected (its context), a model id's
  // download's progress and cancellation (io.progress). The loader itself is not changed.
  virtual std::unique_ptr<WeightSource> get_weights(const std::string& model_name_or_path, const LoadOptions& call) const = 0;
  // vLLM's get_weights(model_name_or_path): the same under the loader's own options.
  std::unique_ptr<WeightSource> get_weights(const std::string& model_name_or_path) const {
    return get_weights(model_name_or_path, options_);
  }

  // How to put it in: maps names, checks shapes, reads every tensor once straight into its
  // parameter (converting to the parameter's dtype), under `call` — the options of this call
  // (strict, device, progress and cancellation, zero_copy, ...; start from options()). The loader
  // itself is not changed: one loader serves several threads at once. Loaders may override; most
  // reuse this (plan_load + execute_load).
  virtual LoadReport load_weights(Model& model, const WeightSource& source, const LoadOptions& call) const;
  // The same under the loader's own options.
  LoadReport load_weights(Model& model, const WeightSource& source) const { return load_weights(model, source, options_); }

  // A model whose parameters mirror the checkpoint's tensors (after name mapping; under Hugging
  // Face names with auto_names), each in `dtype()` if set, else in the tensor's own dtype.
  Model mirror_model(const WeightSource& source) const;
  // The catalogue under the names a load of mirror_model() would give its tensors: with
  // auto_names, Hugging Face names and q/k rows in its rotary layout (what convert writes and the
  // engine reads its configuration from); otherwise the same tensors. Shares `source`'s files.
  std::unique_ptr<WeightSource> canonical_source(const WeightSource& source) const;

  LoadOptions& options() noexcept { return options_; }
  const LoadOptions& options() const noexcept { return options_; }
  // The `dtype` kwarg: the dtype weights are converted to when the loader builds the model.
  std::optional<DType>& dtype() noexcept { return dtype_; }
  const std::optional<DType>& dtype() const noexcept { return dtype_; }
  // The call's opener (its context's, else the local one) behind a CachingOpener: what one
  // get_weights call reads through (and the source it returns keeps), so that detection,
  // catalogue and data see the same version of every file.
  static std::shared_ptr<const Opener> session_opener(const LoadOptions& call);

 protected:
  LoadOptions options_;
  std::optional<DType> dtype_;
};

}  // namespace wl
