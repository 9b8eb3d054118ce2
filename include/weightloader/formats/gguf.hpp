// GGUF (llama.cpp / ggml), versions 2 and 3, little-endian: "GGUF", u32 version, u64 tensor count,
// u64 metadata count, the metadata (key, u32 value type, value), the tensor infos (name, u32 n_dims,
// u64 ne[n_dims] with ne[0] the fastest-varying, u32 ggml type, u64 offset), then the data section
// at the next multiple of `general.alignment` (default 32).
//
// The reader enforces ggml's rules (gguf.cpp), each broken rule with its own ErrorCode: every count
// is checked against the bytes left in the file before anything is allocated; string and array
// lengths are bounded; keys and tensor names are unique; n_dims <= 4; element counts and byte
// sizes do not overflow; rows are whole blocks; offsets are aligned; tensor data lies inside the
// file. In addition it rejects what ggml lets through or aborts on: empty keys, BOOL bytes other
// than 0/1, a non-UINT32 alignment, and tensors whose bytes overlap. Nested arrays, which the
// GGUF specification allows and ggml refuses, are read up to kGgufMaxArrayDepth levels.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "weightloader/format.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t { U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64 };
WL_API std::string_view gguf_type_name(GgufType type);  // the specification's names: "UINT8", ..., "FLOAT64"

// An array value: one typed vector, whose alternative index is the element GgufType.
struct WL_API GgufArray {
  std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>, std::vector<int16_t>,
               std::vector<uint32_t>, std::vector<int32_t>, std::vector<float>, std::vector<bool>,
               std::vector<std::string>, std::vector<GgufArray>, std::vector<uint64_t>, std::vector<int64_t>,
               std::vector<double>>
      elements;

  GgufType type() const noexcept { return static_cast<GgufType>(elements.index()); }
  uint64_t size() const noexcept;
  bool operator==(const GgufArray&) const = default;
  // The elements if they are of type T (e.g. get<std::string>() for tokenizer.ggml.tokens), else null.
  template <typename T>
  const std::vector<T>* get() const noexcept { return std::get_if<std::vector<T>>(&elements); }
};

// One metadata value; the alternative's index is its GgufType.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;
using GgufMetadata = std::map<std::string, GgufValue, std::less<>>;

inline GgufType gguf_value_type(const GgufValue& value) noexcept { return static_cast<GgufType>(value.index()); }
// How Catalogue::metadata shows a value: integers in decimal, floats in the shortest form that reads
// back exactly, true/false, strings as they are, arrays as "[array of 32000 STRING]".
WL_API std::string gguf_value_to_string(const GgufValue& value);
// The value of an integer of any width or signedness, if it is one and is not negative.
WL_API std::optional<uint64_t> gguf_value_to_uint(const GgufValue& value);

// Limits, as ggml sets them.
inline constexpr uint64_t kGgufMaxStringBytes = 64ull << 20;   // GgufStringTooLong above
inline constexpr uint64_t kGgufMaxArrayElements = 64ull << 20; // GgufArrayTooLong above
inline constexpr uint64_t kGgufMaxAlignment = 1ull << 20;      // GgufBadAlignment above
inline constexpr size_t kGgufMaxNameBytes = 63;                // GGML_MAX_NAME - 1; GgufNameTooLong above
inline constexpr uint32_t kGgufMaxDims = 4;                    // GgufTooManyDims above
inline constexpr unsigned kGgufMaxArrayDepth = 8;              // GgufNestingTooDeep above
inline constexpr uint64_t kGgufDefaultAlignment = 32;

// ggml tensor types, numbered as in the file (gaps are types ggml removed).
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};
// "Q8_0"; "type N" for a number that is not a ggml type.
WL_API std::string ggml_type_name(GgmlType type);
// Elements per block: 1 for the plain types (F32, F16, I8, ...), 32 for Q8_0, 256 for the K-quants;
// 1 for a number that is not a ggml type.
WL_API uint64_t ggml_block_elems(GgmlType type);
// Whether weightloader can read tensors of this type (raw or through a decoder).
WL_API bool ggml_type_supported(GgmlType type);

// A tensor as the file describes it.
struct WL_API GgufTensorRecord {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> dims;  // ne[0..n_dims): ne[0] varies fastest (the reverse of the PyTorch shape)
  uint64_t offset = 0;         // relative to the data section, as stored
  uint64_t nbytes = 0;
  Shape shape() const;         // the PyTorch order: dims reversed
};

// Everything in a GGUF file but its tensor data.
struct WL_API GgufFile {
  std::string path;
  uint32_t version = 3;
  uint64_t alignment = kGgufDefaultAlignment;
  uint64_t data_offset = 0;               // absolute file offset of the data section
  GgufMetadata metadata;
  std::vector<GgufTensorRecord> tensors;  // in file order

  const GgufValue* find(std::string_view key) const;
  // The value of `key` if present with exactly type T (e.g. get<uint32_t>("llama.block_count")).
  template <typename T>
  const T* get(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? std::get_if<T>(v) : nullptr;
  }
};

// Reads and validates one file's header, metadata and tensor infos (never its tensor data).
// Throws Truncated, GgufBadMagic, GgufBadVersion, GgufCountTooLarge, GgufStringTooLong,
// GgufArrayTooLong, GgufBadValueType, GgufNestingTooDeep, GgufBadBool, GgufEmptyKey,
// GgufDuplicateKey, GgufBadAlignment, GgufNameTooLong, DuplicateTensorName, GgufTooManyDims,
// GgufBadDim, ValidationOverflow, GgufBadTensorType, GgufRowNotBlockMultiple, GgufMisalignedOffset,
// GgufTensorOutOfBounds and GgufTensorOverlap.
WL_API GgufFile read_gguf(const ByteSource& source);
WL_API GgufFile read_gguf(const std::string& path);  // by name, through local_opener()

// A catalogue of a GGUF checkpoint: its tensors under their stored names, with their stored rows.
// When `path` is the first file of a split model (<name>-00001-of-0000N.gguf, split.count = N),
// every split is read and checked against the others; the metadata is the first split's. Tensor
// dtypes: F32, F16, BF16, F64, I8, I16, I32, I64 raw; every other ggml type but Q8_1, Q1_0 and Q2_0
// (the K-quants, TQ*, IQ*, MXFP4, NVFP4, ...) decoded to F32 through TensorInfo::decoder. A tensor of
// those three is listed all the same (stored_type() names its type); reading it throws
// GgufUnsupportedTensorType naming the type, the file and the tensor.
// Throws everything read_gguf does, plus GgufSplitMismatch, GgufSplitMissing and TensorInTwoFiles.
// `opener` finds the other splits beside the first.
WL_API Catalogue read_gguf_catalogue(const ByteSource& source, const Opener& opener);
WL_API Catalogue read_gguf_catalogue(const std::string& path);  // by name, through local_opener()

// Whether a file's first bytes are "GGUF" followed by version 2 or 3.
WL_API bool is_gguf(std::span<const std::byte> head, uint64_t file_size);

// --- writing ---

// A block type the writer quantises, byte for byte as gguf-py's gguf.quants.quantize does (the
// pinned gguf-py's NumPy code: its roundings, its float32 operations in the same order, its f16
// scales): its ggml type, the general.file_type (llama.cpp's llama_ftype) of a file whose matrices
// are of it, and what a block holds.
struct GgufQuantizedType {
  GgmlType type;
  uint32_t file_type;
  std::string_view about;  // "4.5 bits: blocks of 32 4-bit values, one f16 scale"
};
// Q8_0, Q5_1, Q5_0, Q4_1, Q4_0, MXFP4, TQ2_0 and TQ1_0 (formats/gguf/quantizers/list.inc), from the
// most bits per value to the fewest.
WL_API std::span<const GgufQuantizedType> gguf_quantized_types();

// A tensor the writer will receive: stored as `type` (F32, F16, BF16 or one of
// gguf_quantized_types()). The name is stored as given; the caller chooses it (the converter:
// through the "gguf" naming scheme).
struct GgufWriteEntry {
  std::string name;
  Shape shape;  // PyTorch order; for a block type the last dimension must be whole blocks (32, or 256 for TQ*)
  GgmlType type = GgmlType::F32;
  // Stored row j is the tensor's row row_order[j] (e.g. q/k rows interleaved, as llama.cpp reads
  // a Llama); empty: the rows as given. Rows along dim 0; for a block type each row must be whole blocks.
  std::vector<uint64_t> row_order = {};
};

// Writes a GGUF v3 file whose tensors arrive one after the other, so a checkpoint never has to be
// in memory at once. The header is written by the constructor; write_tensor() then takes each
// entry's tensor in order (any dtype, converted or quantised as the entry says; a block type as
// gguf-py quantises it, refusing a value that is not finite). finish() checks
// that every tensor came and moves the file into place; without it `path` is left untouched.
// Alignment 32 unless the metadata sets general.alignment (a UINT32 power of two).
// Throws InvalidArgument, DuplicateTensorName, GgufNameTooLong, GgufEmptyKey, GgufBadAlignment,
// GgufRowNotBlockMultiple and ShapeMismatch.
class WL_API GgufStreamWriter {
 public:
  GgufStreamWriter(std::string path, std::vector<GgufWriteEntry> entries, const GgufMetadata& metadata = {});
  ~GgufStreamWriter();
  GgufStreamWriter(const GgufStreamWriter&) = delete;
  GgufStreamWriter& operator=(const GgufStreamWriter&) = delete;

  void write_tensor(const TensorView& tensor);
  // Writes the next entry in parts, its slices along dim 0 in order, so that a stack need not be
  // assembled in memory (GGUF's experts, each from its own tensor): a part's shape is the entry's
  // with a smaller dim 0, or the entry's without dim 0 (one slice). The entry is complete when its
  // dim 0 is covered. An entry with a row_order is written whole. Throws as write_tensor.
  void write_part(const TensorView& part);
  // Writes the next entry's next slices along dim 0 already in its stored type (a block type's
  // blocks as another writer laid them out, copied as they are): `bytes` is whole slices, and no
  // more than the entry has left. Not for an entry with a row_order. Throws InvalidArgument.
  void write_stored(std::span<const std::byte> bytes);
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A whole tensor to write and its stored type.
struct GgufWriteTensor {
  std::string name;
  TensorView tensor;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> row_order = {};  // as GgufWriteEntry::row_order
};

// Writes `tensors` in the order given (through GgufStreamWriter).
WL_API void write_gguf(const std::string& path, const std::vector<GgufWriteTensor>& tensors,
                const GgufMetadata& metadata = {});

}  // namespace wl
