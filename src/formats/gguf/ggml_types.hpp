// The ggml tensor types: names, block geometry, and how weightloader reads each one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "weightloader/formats/gguf.hpp"
#include "weightloader/source.hpp"

namespace wl::gguf {

struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;
  uint64_t block_elems;  // elements per block (1 for plain types)
  uint64_t block_bytes;  // bytes per block
};

// The traits of type number `id`; null when it is not a ggml type.
const GgmlTypeTraits* ggml_type_traits(uint32_t id);

// The dtype of a plain (unquantised) type weightloader reads raw.
std::optional<DType> ggml_raw_dtype(GgmlType type);
// The F32 decoder of a quantised type weightloader reads; null for the others.
std::shared_ptr<const Decoder> ggml_decoder(GgmlType type);
// The names of the types ggml_decoder decodes, in its table's order ("Q4_0, Q4_1, ...").
std::string ggml_decoded_type_names();
// What the catalogue holds for tensor `tensor` of `file`, of a ggml type no decoder reads: its
// geometry, so it is listed, and a refusal (GgufUnsupportedTensorType naming the type, the file and
// the tensor) when it is read. Null when `type` is not a ggml type.
std::shared_ptr<const Decoder> ggml_refusing_decoder(GgmlType type, std::string file, std::string tensor);

// Quantises `n` finite floats (a multiple of the type's block) into n / block_elems blocks at
// `out`, as gguf-py's gguf.quants.quantize does (quantizers/, one file per type, the table in
// quants.cpp). False (nothing written) for a type without a quantiser (gguf_quantized_types()).
bool ggml_quantize(GgmlType type, const float* x, uint64_t n, std::byte* out);

}  // namespace wl::gguf
