// Synthetic Llama-shaped checkpoints with deterministic values, for demos, tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/dtype.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

struct WL_API LlamaShape {
  uint64_t vocab = 512;
  uint64_t hidden = 64;
  uint64_t intermediate = 172;
  uint64_t layers = 2;
  uint64_t heads = 4;
  uint64_t kv_heads = 2;
  bool tie_embeddings = false;

  // Named presets: "tiny" (about 0.2 M parameters), "small" (about 56 M), "100m" (about 110 M, tied
  // embeddings: the engine's speed benchmark), "1gb" (about 270 M,
  // 1.08 GB in F32), "2gb" (about 610 M, 2.4 GB in F32). InvalidArgument lists them for an unknown name.
  static LlamaShape preset(const std::string& name);
  uint64_t parameter_count() const;
};

struct SynthTensor {
  std::string name;  // Hugging Face Llama names: model.layers.0.self_attn.q_proj.weight, ...
  Shape shape;
};

// Every tensor of a LlamaForCausalLM checkpoint of this shape, in Hugging Face order.
WL_API std::vector<SynthTensor> llama_tensors(const LlamaShape& shape);

// Fills elements [first, first + count) of tensor `name` with its deterministic values (a hash of
// seed, name and element index; norms near 1, matrices uniform in ±0.05), written as `dtype`.
WL_API void synth_values(const std::string& name, uint64_t seed, uint64_t first, uint64_t count, DType dtype, void* dst);

enum class SynthFormat { Safetensors, CustomBinary };

struct SynthOptions {
  LlamaShape shape;
  DType dtype = DType::F32;
  SynthFormat format = SynthFormat::Safetensors;
  unsigned shards = 1;  // safetensors only: >1 writes model-0000k-of-0000n.safetensors + index
  uint64_t seed = 0;
};

// Writes the checkpoint into directory `dir` (created if missing), streaming tensor by tensor so
// memory stays small whatever the size. Returns the bytes of tensor data written.
WL_API uint64_t write_synthetic_llama(const std::string& dir, const SynthOptions& options);

}  // namespace wl
