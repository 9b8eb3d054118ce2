#include "loaders/quantized_source.hpp"

#include "formats/quantized_checkpoint.hpp"
#include "loaders/stacked_experts_source.hpp"
#include "weightloader/error.hpp"

namespace wl {

bool quantized_as_stored(const std::string& kwarg) {
  if (kwarg == "dequantize") return false;
  if (kwarg == "as_stored") return true;
  throw Error(ErrorCode::InvalidKwarg, "quantized='" + kwarg + "': dequantize or as_stored");
}

std::unique_ptr<WeightSource> checkpoint_view(std::unique_ptr<WeightSource> source, const Opener& files, bool as_stored) {
  return with_experts_unstacked(dequantized_source(std::move(source), files, as_stored));
}

}  // namespace wl
