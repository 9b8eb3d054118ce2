// Quantizing a dense checkpoint into a Hugging Face quantized layout, so that tests (and users)
// can make their own quantized checkpoints: round-to-nearest, no calibration.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

enum class QuantizeMethod {
  GptqInt4,    // GPTQ 4-bit, symmetric, v1 zeros (stored 7 = 8 − 1), sequential g_idx, as AutoGPTQ writes
  Fp8Channel,  // compressed-tensors float-quantized: F8_E4M3 weight, BF16 weight_scale [out, 1] = amax / 448
};
WL_API QuantizeMethod parse_quantize_method(const std::string& name);  // "gptq-int4", "fp8-channel"

struct QuantizeOptions {
  QuantizeMethod method = QuantizeMethod::GptqInt4;
  int64_t group_size = 128;  // GPTQ: input features per group (dividing every quantized layer's width); -1: one group
};

// The quantized checkpoint, in memory: every 2-D `*.weight` of a linear layer (not embeddings,
// norms or lm_head; GPTQ: widths the group and the packing divide) quantized, the rest as it was,
// with config.json's quantization_config saying how. Write it with convert_checkpoint. Reads the
// source one tensor at a time.
WL_API std::unique_ptr<WeightSource> quantize_checkpoint(const WeightSource& dense, const QuantizeOptions& options);

}  // namespace wl
