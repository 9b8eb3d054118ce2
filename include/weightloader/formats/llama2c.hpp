// llama2.c checkpoints (karpathy/llama2.c), read as Hugging Face Llama tensors.
//   v0  (legacy, no magic): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
//       seq_len), a negative vocab_size meaning an unshared classifier; then float32 arrays, each
//       stacked over layers: embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
//       two unused rotary tables [seq_len, head_size / 2], and wcls when unshared.
//   v1  a 256-byte header: u32 magic 0x616b3432 ("ak42"), i32 version, the 7 int32, a u8 shared
//       classifier flag, zeros; then float32: rms_att, rms_ffn, rms_final, embedding, wq, wk, wv,
//       wo, w1, w2, w3, wcls when unshared.
//   v2  as v1 with an i32 group size after the flag (byte 37); the norms stay float32 and every
//       matrix (one per layer) is stored as its int8 values, then its float32 scales, one per
//       group of group_size values: value = int8 * scale.
// Each stacked array becomes one tensor per layer (model.layers.N.self_attn.q_proj.weight, ...,
// w1 = mlp.gate_proj, w2 = mlp.down_proj, w3 = mlp.up_proj). llama2.c keeps q/k rows in the
// interleaved rotary layout; the catalogue presents them in Hugging Face's layout through
// TensorInfo::row_order, so nothing is copied. A shared classifier is reported as tied
// embeddings: no lm_head.weight, metadata tie_word_embeddings = "true".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weightloader/format.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Bounds on the header fields: far above any released Llama, and low enough that every size
// derived from them stays below 2^50 bytes, so no size computation can overflow.
inline constexpr uint64_t kLlama2cMaxDim = 1 << 16;
inline constexpr uint64_t kLlama2cMaxHiddenDim = 1 << 18;
inline constexpr uint64_t kLlama2cMaxLayers = 1 << 10;
inline constexpr uint64_t kLlama2cMaxVocab = 1 << 24;
inline constexpr uint64_t kLlama2cMaxSeqLen = 1 << 24;

inline constexpr uint32_t kLlama2cMagic = 0x616b3432;  // "ak42" read as a little-endian u32

struct WL_API Llama2cHeader {
  int version = 0;  // 0 (legacy), 1 (float32) or 2 (int8 groups)
  uint64_t dim = 0;
  uint64_t hidden_dim = 0;
  uint64_t n_layers = 0;
  uint64_t n_heads = 0;
  uint64_t n_kv_heads = 0;
  uint64_t vocab_size = 0;         // always positive here; v0's sign is `shared_classifier`
  uint64_t seq_len = 0;            // maximum sequence length
  bool shared_classifier = true;   // the classifier is the token embedding
  uint64_t group_size = 0;         // v2: values per quantisation group; ignored otherwise

  uint64_t head_size() const { return dim / n_heads; }
  uint64_t kv_dim() const { return n_kv_heads * head_size(); }
  bool operator==(const Llama2cHeader&) const = default;
};

// Reads and validates the header of `path`, including that the file is exactly as long as the
// header implies. Throws FileNotFound / Io, Llama2cHeaderTruncated, Llama2cUnsupportedVersion,
// Llama2cInvalidField, Llama2cInconsistentHeads, Llama2cInvalidGroupSize and Llama2cSizeMismatch.
WL_API Llama2cHeader read_llama2c_header(const ByteSource& source);
WL_API Llama2cHeader read_llama2c_header(const std::string& path);  // by name, through local_opener()

// The catalogue of `path` (errors as read_llama2c_header). Tensors in file order; v2 matrices
// decode to F32. Metadata: version, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len, shared_classifier and tie_word_embeddings ("true" / "false"), and group_size for v2.
WL_API Catalogue read_llama2c_catalogue(const ByteSource& source);
WL_API Catalogue read_llama2c_catalogue(const std::string& path);  // by name, through local_opener()

// The format entry: v1/v2 by their magic; v0 when the header is valid and the file size is
// exactly the one it implies.
WL_API const FileFormat& llama2c_format();

// Writes `tensors` (Hugging Face names, any float dtype, q/k in Hugging Face's layout) as a
// llama2.c checkpoint of `header.version`, replacing `path` atomically. The tensors must be
// exactly the ones `header` implies, lm_head.weight only when the classifier is unshared.
// v0 gets the rotary tables llama2.c wrote (theta 10000); v2 is quantised as llama2.c's export
// does (scale = max |x| / 127 per group, values rounded half to even).
// Throws the header's errors, DuplicateTensorName, TensorNotFound (a tensor missing),
// InvalidArgument (a tensor the checkpoint has no place for) and ShapeMismatch.
WL_API void write_llama2c(const std::string& path, const Llama2cHeader& header,
                   const std::vector<std::pair<std::string, TensorView>>& tensors);

}  // namespace wl
