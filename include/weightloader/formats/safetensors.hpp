// safetensors: an 8-byte little-endian header length N, N bytes of UTF-8 JSON describing every
// tensor (dtype, shape, data_offsets relative to the data buffer) plus optional string metadata
// under "__metadata__", then the data buffer, little-endian and row-major.
//
// The reader enforces every rule of the reference implementation (huggingface/safetensors), each
// broken rule with its own ErrorCode, and in addition rejects what the reference lets through
// silently: a tensor name or field given twice, metadata that is not an object of strings (null is
// accepted as "no metadata", as upstream does), and dtypes weightloader cannot hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weightloader/format.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Headers longer than this are rejected (HeaderTooLarge), as the reference does.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Checks the length prefix. `prefix` holds the file's first min(8, file_size) bytes. Returns the
// header length N. Throws HeaderTooSmall (file under 8 bytes), HeaderTooLarge (N above the limit)
// or InvalidHeaderLength (8 + N past the end of the file).
WL_API uint64_t safetensors_header_length(std::span<const std::byte> prefix, uint64_t file_size, const std::string& file);

// Validates a header without any I/O. `header` is the N header bytes, `data_start` the file offset
// of the data buffer (8 + N), `file_size` the whole file's size and `file` its path (the catalogue's one file,
// index 0, and named in messages). Tensors come back sorted by data offset, with absolute offsets.
// Throws InvalidHeader, InvalidHeaderDeserialization, InvalidHeaderStart, DuplicateTensorName,
// InvalidMetadata, InvalidOffset, ValidationOverflow, MisalignedSlice, TensorInvalidInfo,
// MetadataIncompleteBuffer and UnsupportedDType.
WL_API Catalogue parse_safetensors_header(std::string_view header, uint64_t data_start, uint64_t file_size,
                                   const std::string& file);

// safetensors' sub-byte float dtypes F4 (E2M1), F6_E2M3 and F6_E3M2, which the library has no element
// type for: a tensor of one is catalogued as F32 with this decoder (its stored type the dtype's
// name), one shared object per dtype; null for any other name.
WL_API std::shared_ptr<const Decoder> safetensors_subbyte_decoder(std::string_view dtype_name);

// safetensors' complex dtypes, which the library has no element type for either, are pairs of a
// real one (real part, imaginary part): C64 is a pair of F32. nullopt for any other dtype name.
WL_API std::optional<DType> safetensors_complex_part(std::string_view dtype_name);

// A catalogue that holds complex tensors as pairs of their part: the same bytes, the shape with a
// last dimension of 2 added (a C64 [3, 4] is an F32 [3, 4, 2]); `complex` names them, in file order.
// For readers that present them as complex numbers themselves (the Python drop-in's complex64).
struct SafetensorsWithComplex {
  Catalogue catalogue;
  std::vector<std::string> complex;
};
// parse_safetensors_header, with complex tensors catalogued as pairs instead of refused.
WL_API SafetensorsWithComplex parse_safetensors_header_with_complex(std::string_view header, uint64_t data_start,
                                                                    uint64_t file_size, const std::string& file);

// Reads the length prefix and the header of a source (never the data) and validates them.
WL_API Catalogue read_safetensors_catalogue(const ByteSource& source);
// The same, with complex tensors catalogued as pairs (parse_safetensors_header_with_complex).
WL_API SafetensorsWithComplex read_safetensors_catalogue_with_complex(const ByteSource& source);
WL_API Catalogue read_safetensors_catalogue(const std::string& path);  // by name, through local_opener()

// The format entry: sniffs a plausible length prefix followed by '{' after optional whitespace.
WL_API const FileFormat& safetensors_format();

// A tensor the streaming writer will receive.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

// Writes a safetensors file whose tensors arrive one after the other, so a checkpoint never has
// to be in memory at once. The header (padded with spaces to a multiple of 8) is written by the
// constructor; the tensors' bytes must then arrive in the order of `entries`, through write()
// (raw bytes, in pieces of any size) or write_tensor() (one whole tensor). finish() checks that
// every byte came and moves the file into place; without it `path` is left untouched.
// Names must be valid UTF-8 and not "__metadata__" (InvalidArgument), and unique (DuplicateTensorName).
// After write() has ended at a tensor boundary, zero-size entries there count as written.
class WL_API SafetensorsStreamWriter {
 public:
  SafetensorsStreamWriter(std::string path, std::vector<SafetensorsEntry> entries,
                          const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsStreamWriter();
  SafetensorsStreamWriter(const SafetensorsStreamWriter&) = delete;
  SafetensorsStreamWriter& operator=(const SafetensorsStreamWriter&) = delete;

  // Appends raw little-endian bytes; more bytes than the entries declare is InvalidArgument.
  void write(const void* data, size_t length);
  // Writes the next whole tensor; its dtype and shape must match the next entry (ShapeMismatch /
  // InvalidArgument otherwise). Non-contiguous views are written in row-major order.
  void write_tensor(const TensorView& tensor);
  // Bytes the data buffer still expects.
  uint64_t bytes_remaining() const noexcept;
  // Checks that all bytes were written, then commits the file.
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The __metadata__ key under which write_safetensors(record_digests) records each tensor's sha256
// (of its bytes as written), as JSON text {"name": "hex", ...}: what a refresh compares to find
// the tensors a newer checkpoint changed without reading them.
inline constexpr const char* kTensorDigestsKey = "weightloader.tensor_sha256";

// The tensor digests the writer recorded (kTensorDigestsKey) in the __metadata__ of each safetensors
// file `source` reads from, by tensor name; a tensor whose file recorded none is absent. Reads the
// files' headers again, never tensor data. InvalidMetadata naming the file for a value that is
// not such a JSON object.
WL_API std::map<std::string, std::string> recorded_tensor_digests(const WeightSource& source);

// Writes `tensors` in the order given, with `metadata` as "__metadata__" (omitted when empty);
// record_digests: and each tensor's sha256 under kTensorDigestsKey (hashed before the write).
WL_API void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, TensorView>>& tensors,
                              const std::map<std::string, std::string>& metadata = {}, bool record_digests = false);
// The same bytes in memory, without a file: `allocate` is given their exact size and returns where
// to put them (a Python bytes object's buffer, a vector's); errors name "(in memory)".
WL_API void serialize_safetensors(const std::vector<std::pair<std::string, TensorView>>& tensors,
                                  const std::map<std::string, std::string>& metadata, bool record_digests,
                                  const std::function<std::byte*(uint64_t size)>& allocate);

// A sharded checkpoint: reads `model.safetensors.index.json` and the files its weight_map names
// (only those; paths are relative to the index's directory), checks that the index and the files
// agree, and merges their catalogues (files in name order, each sorted by offset). Metadata: the
// index's scalar "metadata" values (numbers as JSON text), then the shards' __metadata__ entries
// not already set (files in name order).
// Throws IndexInvalid, IndexFileMissing, IndexTensorMissing, IndexTensorUnlisted, TensorInTwoFiles
// and every error of read_safetensors_catalogue.
WL_API Catalogue open_safetensors_index(const std::string& index_json_path);

// The header as the file states it, every rule of the format checked: for readers that need what
// the catalogue leaves out (whether there is a __metadata__ at all; tensors of the dtypes
// weightloader cannot hold, which the Python drop-in serves itself).
struct SafetensorsHeader {
  struct Tensor {
    std::string name;
    std::string dtype_name;      // as written: "F32", "C64", ...
    std::optional<DType> dtype;  // empty for a dtype weightloader cannot hold
    Shape shape;
    uint64_t offset = 0;  // absolute byte offset in the file
    uint64_t nbytes = 0;
  };
  std::vector<Tensor> tensors;                                 // by data offset
  std::optional<std::map<std::string, std::string>> metadata;  // nullopt: no __metadata__ (or null)
};

// Every rule of parse_safetensors_header but its last (refusing a dtype weightloader cannot hold),
// in the same order and with the same errors.
WL_API SafetensorsHeader parse_stated_safetensors_header(std::string_view header, uint64_t data_start, uint64_t file_size,
                                                  const std::string& file);
// The length prefix and the header of a source (never the data), checked as
// read_safetensors_catalogue checks them.
WL_API SafetensorsHeader read_stated_safetensors_header(const ByteSource& source);

}  // namespace wl
