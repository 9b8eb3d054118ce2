// Quantized Hugging Face checkpoints (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors) seen dense.
#pragma once

#include <memory>

#include "weightloader/byte_source.hpp"
#include "weightloader/source.hpp"

namespace wl {

// The loaders' `quantized` kwarg: "dequantize" (default) or "as_stored"; InvalidKwarg otherwise.
bool quantized_as_stored(const std::string& kwarg);
inline constexpr const char* kQuantizedKwargHelp =
    "quantized checkpoints (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors): dequantize (default: each quantized "
    "layer one dense <layer>.weight, decoded as it is read) or as_stored (the packed tensors, byte for byte)";

// What the built-in loaders give for a checkpoint they opened: dequantized_source()
// (formats/quantized_checkpoint.hpp), its stacked
// experts then one tensor per expert (with_experts_unstacked, loaders/stacked_experts_source.hpp).
std::unique_ptr<WeightSource> checkpoint_view(std::unique_ptr<WeightSource> source, const Opener& files, bool as_stored);

}  // namespace wl
