// Quantized Hugging Face checkpoints (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors) seen dense.
#pragma once

#include <memory>

#include "weightloader/byte_source.hpp"
#include "weightloader/source.hpp"

namespace wl {

// `source` itself when it is not quantized; else its dense view (formats/quantized/dense_view.hpp),
// or, `as_stored`, its packed tensors with metadata["quantization"] saying what they are.
// The method comes from metadata["config.json"]'s quantization_config, else from a
// quantization_config.json or quantize_config.json beside the checkpoint.
std::unique_ptr<WeightSource> dequantized_source(std::unique_ptr<WeightSource> source, const Opener& files, bool as_stored = false);

}  // namespace wl
