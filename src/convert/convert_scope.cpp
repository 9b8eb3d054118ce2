// What a conversion reads of its source: the tensors the output holds, counted for the progress
// and the summary.
#include <memory>

#include "convert/gguf_output.hpp"
#include "weightloader/convert_checkpoint.hpp"

namespace wl {

ConvertScope convert_scope(const WeightSource& s, const ConvertOptions& o) {
  const std::unique_ptr<WeightSource> language_model = o.to == CheckpointFormat::Gguf ? gguf_language_model(s) : nullptr;
  const WeightSource& read = language_model ? *language_model : s;
  return {read.tensors().size(), read.total_bytes(), s.tensors().size() - read.tensors().size()};
}

}  // namespace wl
