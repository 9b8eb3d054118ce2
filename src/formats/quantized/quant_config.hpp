// What a Hugging Face quantization_config says: the method and the settings its decoder needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wl::quant {

enum class Method { Gptq, Awq, Bnb4, Bnb8, Fp8, CompressedTensors, Mxfp4, Modelopt };

struct QuantConfig {
  Method method = Method::Gptq;
  std::string origin;          // the file it came from, for messages
  std::string block_json;      // the quantization_config block itself, as JSON text
  int bits = 0;                // 4 / 8 (GPTQ, AWQ, bnb), 8 (FP8), 4 (MXFP4)
  int64_t group_size = -1;     // GPTQ/AWQ: input features per group; -1: one group per layer
  bool desc_act = false;       // GPTQ act-order: groups follow g_idx, not the input order
  bool sym = true;
  bool zeros_minus_one = true; // GPTQ v1 (checkpoint_format "gptq"): qzeros hold zero - 1; v2 holds zero
  std::string awq_version;     // "gemm"
  std::string bnb_quant_type;  // "nf4" / "fp4"
  bool bnb_double_quant = false;
  int64_t bnb_block_size = 64; // 4-bit blocks (each layer's quant_state says its own)
  std::vector<int64_t> fp8_block;  // FP8 [rows, cols] per scale; empty: per tensor or per channel
  std::string fp8_scale_fmt;   // FP8 scale_fmt ("ue8m0": power-of-two scales); empty when not given
  std::string ct_format;       // compressed-tensors: float-quantized, pack-quantized, naive-quantized, ...
  std::string ct_strategy;     // compressed-tensors weights: tensor, channel, group, block
  std::string ct_sparsity;     // compressed-tensors sparsity_config format: sparse-bitmask, ...; empty: dense
  std::string modelopt_algo;   // NVIDIA ModelOpt's quant_algo: NVFP4 or FP8
  std::vector<std::string> ignore;  // layers left dense (compressed-tensors ignore, modules_to_not_convert)

  // compressed-tensors' "dense" format with no or "dense" sparsity: the weights are stored as they are.
  bool stored_dense() const;
  std::string method_name() const;  // "gptq", "awq", "bitsandbytes-nf4", "bitsandbytes-int8", "fp8", ...
  std::string describe() const;     // one line for `inspect`: method, bits, group, conventions
};

// Reads a quantization_config block (config.json's, or a standalone quantize_config.json /
// quantization_config.json / ModelOpt's hf_quant_config.json). Throws QuantConfigInvalid naming `origin` and the key for a malformed
// block, QuantUnsupported for a method weightloader does not know.
QuantConfig parse_quant_config(const nlohmann::json& block, const std::string& origin);

// The block from config.json text, if it has one.
std::optional<QuantConfig> quant_config_of_config_json(const std::string& config_json, const std::string& origin);

}  // namespace wl::quant
