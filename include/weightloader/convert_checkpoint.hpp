// Converting a checkpoint from any readable format into safetensors, GGUF, llama2.c or the
// custom binary format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/byte_size.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/source.hpp"
#include "weightloader/export.hpp"

namespace wl {

enum class CheckpointFormat { Safetensors, Gguf, Llama2c, CustomBinary };
WL_API CheckpointFormat parse_checkpoint_format(const std::string& name);  // InvalidArgument lists them
WL_API std::string_view checkpoint_format_name(CheckpointFormat format);  // the inverse

// The format an output path asks for: `.safetensors` one safetensors file, `.gguf` GGUF, `.bin`
// llama2.c; an existing directory, a path ending in '/' or any other name a directory
// (safetensors, or custom_binary when `to` says so), except names of checkpoint files nothing
// here writes (.pt, .pth, .ckpt, .h5, .onnx, .npz, .msgpack, .json: InvalidArgument unless `to`
// decides). `to` (the user's --to) must agree with the extension: InvalidArgument names both
// otherwise. A new name that is not surely a directory (no trailing '/') may be a GGUF or
// llama2.c file when `to` says so.
WL_API CheckpointFormat output_format_for(const std::string& out, std::optional<CheckpointFormat> to = std::nullopt);

// Llama hyperparameters the tensors' shapes do not tell: found in the source's metadata
// (llama2.c header, GGUF llama.* keys, or a Hugging Face config.json), overridable here.
struct LlamaHeads {
  uint64_t heads = 0;
  uint64_t kv_heads = 0;
  uint64_t seq_len = 0;
  double rms_norm_eps = 1e-5;  // from the configuration when there is one (not overridable)
  double rope_theta = 10000.0;
};
// ConfigInvalid (never the overrides' guess) when the source has a configuration that is wrong.
WL_API LlamaHeads llama_heads_from_metadata(const WeightSource& source, LlamaHeads overrides = {});

struct ConvertOptions {
  CheckpointFormat to = CheckpointFormat::Safetensors;
  std::optional<DType> dtype;   // safetensors: element type written (default: as stored)
  // safetensors directory: at most this many tensor bytes per file, split as Hugging Face's
  // save_pretrained splits (model-00001-of-0000N.safetensors + model.safetensors.index.json);
  // 0: one model.safetensors
  uint64_t shard_bytes = 0;
  std::string gguf_type;         // gguf: the matrices' type, one of gguf_output_types() (vectors
                                 // stay F32; matrices whose rows are not whole blocks of a block
                                 // type are written F16); empty: f16
  // gguf: a checkpoint's MXFP4 experts (gpt-oss's _blocks and _scales) written as GGUF MXFP4, their
  // blocks repacked as llama.cpp's converter repacks them (general.file_type MOSTLY_MXFP4_MOE when
  // the other matrices are f32, f16 or bf16); false: decoded and written as the other matrices.
  // Unset: kept when gguf_type is empty (llama.cpp's converter's default) or "mxfp4", decoded when
  // it names another type.
  std::optional<bool> gguf_keep_mxfp4;
  int llama2c_version = 1;      // llama2.c: 0, 1 or 2
  uint64_t llama2c_group = 64;  // llama2.c v2 group size
  LlamaHeads heads;             // overrides for GGUF / llama2.c
  std::string tokenizer;        // gguf: a tokenizer file (llama2.c, SentencePiece or GGUF) whose
                                // vocabulary is written as tokenizer.ggml.*; empty: none
  ProgressCallback progress;    // the source's stored bytes read so far, tensor by tensor; may be empty
  // Host memory the conversion may hold (0: no limit): OverBudget before anything is read or
  // written when convert_peak_bytes() is above it.
  uint64_t max_host_memory = 0;
};

// A type `convert --gguf-type` writes the matrices in: its name ("q4_0") and what it is ("4.5 bits:
// blocks of 32 4-bit values, one f16 scale"). f32, f16 and bf16, then the types the GGUF writer
// quantises (gguf_quantized_types()), as gguf-py's gguf.quants.quantize does, byte for byte.
struct GgufOutputType {
  std::string name;
  std::string about;
};
WL_API std::vector<GgufOutputType> gguf_output_types();

// What convert_checkpoint reads and writes of `source`: every tensor, except that a multimodal
// checkpoint (Gemma 3, Llama 4, Mistral 3 ...ForConditionalGeneration) written as GGUF is its
// language model alone, as llama.cpp's converter writes it (the vision model goes to a separate
// mmproj file, which this does not write). The progress callback's total is `bytes`.
struct ConvertScope {
  size_t tensors = 0;   // the source's tensors converted
  uint64_t bytes = 0;   // their stored bytes
  size_t left_out = 0;  // the source's tensors not written (a multimodal checkpoint's vision model)
};
WL_API ConvertScope convert_scope(const WeightSource& source, const ConvertOptions& options);

// The most host memory a conversion holds at once: for safetensors and GGUF, the largest tensor as
// read (stored bytes, staged) and as written (or as F32, quantized from); for llama2.c and the
// custom format, the whole model in F32 and the largest tensor's stored bytes.
WL_API uint64_t convert_peak_bytes(const WeightSource& source, const ConvertOptions& options);

// Writes `source` to `out`: a file for GGUF, llama2.c and safetensors when `out` ends in
// `.safetensors`; otherwise a directory (safetensors with config.json, or the custom format).
// Files are written under a temporary name and renamed when complete; a directory is assembled
// beside `out` and renamed into place (its files moved one by one into an existing non-empty
// `out`). An output that is one of the source's files (same path or same inode) is refused with
// InvalidArgument before anything is written. Safetensors and GGUF are streamed tensor by
// tensor; llama2.c and the custom format hold the model once in memory. Returns the bytes of
// tensor data written.
WL_API uint64_t convert_checkpoint(const WeightSource& source, const std::string& out, const ConvertOptions& options);

}  // namespace wl
