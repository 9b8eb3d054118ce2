// Errors: every rule a reader or loader enforces has its own code.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "weightloader/export.hpp"

namespace wl {

// One code per rule broken. docs/errors.md explains each one.
enum class ErrorCode {
  // general
  Io,                    // a read, open or write failed at the OS level
  FileNotFound,          // a named file or directory does not exist
  Truncated,             // a file ended before the bytes its own structure promises
  UnknownFormat,         // a file that no format recognises (nor the start of one cut short)
  InvalidArgument,       // an API or CLI argument is invalid
  UnsupportedDType,      // a dtype name weightloader does not support
  Cancelled,             // the progress callback asked to stop
  ChecksumMismatch,      // bytes differ from the digest that names them (an ETag, a blob's name, a sidecar)
  OverBudget,            // a load cannot fit max_host_memory, refused before it reads
  // safetensors (names follow the reference implementation's SafeTensorError)
  HeaderTooSmall,                // file shorter than the 8-byte header length
  HeaderTooLarge,                // header length above 100,000,000
  InvalidHeaderLength,           // 8 + header length is past the end of the file
  InvalidHeader,                 // header is not UTF-8
  InvalidHeaderDeserialization,  // header is not JSON, or not the expected structure
  InvalidHeaderStart,            // header JSON is not an object
  DuplicateTensorName,           // the same tensor name twice in one header
  TensorInvalidInfo,             // data_offsets span differs from the tensor's byte size
  InvalidOffset,                 // tensors' data ranges leave a gap, overlap, or end < begin
  ValidationOverflow,            // element count or byte size overflows u64
  MisalignedSlice,               // element count × bit size is not a whole number of bytes
  MetadataIncompleteBuffer,      // data buffer does not end exactly at the end of the file
  InvalidMetadata,               // __metadata__ is not an object of strings
  // sharded checkpoints (index.json)
  IndexInvalid,                  // index.json is not valid JSON or lacks weight_map
  IndexFileMissing,              // a file named by the index does not exist
  IndexTensorMissing,            // a tensor named by the index is not in its file
  IndexTensorUnlisted,           // a listed file holds a tensor the index does not name
  TensorInTwoFiles,              // the same tensor name in two files of one checkpoint
  // custom binary format (meta.txt + model.bin)
  MetaLineInvalid,               // a meta.txt line is not `name:d0,d1,...`
  BinSizeMismatch,               // model.bin's size differs from the sum of declared sizes
  // GGUF (llama.cpp / ggml); truncation, duplicate tensor names and overflow use the codes above
  GgufBadMagic,                  // the file does not start with "GGUF"
  GgufBadVersion,                // version other than 2 or 3 (1 is obsolete; big-endian files read as huge)
  GgufCountTooLarge,             // a count or length claims more than the bytes left in the file can hold
  GgufStringTooLong,             // a string longer than 64 MiB (ggml's limit)
  GgufArrayTooLong,              // an array of more than 64 Mi elements (ggml's limit)
  GgufBadValueType,              // a metadata value or array element type outside 0..12
  GgufNestingTooDeep,            // arrays of arrays nested deeper than the reader allows
  GgufBadBool,                   // a BOOL byte other than 0 or 1
  GgufEmptyKey,                  // a metadata key of length 0
  GgufDuplicateKey,              // the same metadata key twice
  GgufBadAlignment,              // general.alignment not a UINT32 power of two up to 1 MiB
  GgufNameTooLong,               // a tensor name of 64 bytes or more (ggml's GGML_MAX_NAME)
  GgufTooManyDims,               // a tensor with n_dims above 4
  GgufBadDim,                    // a dimension above INT64_MAX (negative as ggml reads it)
  GgufBadTensorType,             // a tensor type number that is not a ggml type
  GgufUnsupportedTensorType,     // reading a ggml type weightloader cannot decode (Q8_1, Q1_0, Q2_0)
  GgufRowNotBlockMultiple,       // ne[0] not a multiple of the type's block size
  GgufMisalignedOffset,          // a tensor offset not a multiple of the alignment
  GgufTensorOutOfBounds,         // a tensor's bytes extend past the end of the file
  GgufTensorOverlap,             // two tensors' byte ranges overlap
  GgufSplitMismatch,             // split files whose names, split.* keys or tensor counts disagree
  GgufSplitMissing,              // a split file that split.count promises does not exist
  GgufHeadCount,                 // Llama head counts missing, not integers, or not splitting q/k rows into heads
  // llama2.c checkpoints
  Llama2cHeaderTruncated,        // file shorter than its header (28 bytes; 256 after the magic)
  Llama2cUnsupportedVersion,     // the "ak42" magic with a version other than 1 or 2
  Llama2cInvalidField,           // a header field is zero, negative or above its bound
  Llama2cInconsistentHeads,      // n_heads not dividing dim, n_kv_heads not dividing n_heads, or odd head size
  Llama2cInvalidGroupSize,       // v2 group size not positive or not a divisor of dim
  Llama2cSizeMismatch,           // file size differs from the size the header implies
  // PyTorch checkpoints (zip + pickle)
  ZipInvalid,                    // the zip container is malformed (directory, local header, bounds, overflow)
  ZipEntryCompressed,            // a zip entry the reader needs is compressed or encrypted, not stored
  PickleInvalid,                 // data.pkl is not a well-formed pickle of protocol 2 to 5 (or uses an unsupported opcode)
  PickleGlobalNotAllowed,        // data.pkl names a global outside the allow-list (never executed)
  PickleLimitExceeded,           // data.pkl exceeds a size, memo, stack, object or nesting bound
  LegacyFormat,                  // a pre-1.6 PyTorch checkpoint (pickle sequence or tar): re-save it
  StateDictNotFound,             // no dict of tensors in the checkpoint, or none under the chosen key
  StateDictAmbiguous,            // several dicts of tensors and no key chosen
  StorageInvalid,                // a storage entry missing, of the wrong size or reused as another type; bad byteorder
  TensorOutOfStorage,            // a tensor's elements reach outside its storage (or a negative offset or stride)
  UnsupportedLayout,             // a valid layout the reader cannot present (a strided big-endian tensor)
  // quantized Hugging Face checkpoints (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors)
  QuantConfigInvalid,            // quantization_config malformed, or contradicting the checkpoint's tensors
  QuantTensorsInconsistent,      // a quantized layer's packed weight, scales, zeros or g_idx disagree in shape or dtype
  QuantUnsupported,              // a quantization method or setting weightloader cannot decode or write
  // loading
  UnknownLoader,                 // no loader registered under a name
  LoaderExists,                  // register with a name already taken
  UnknownKwarg,                  // a kwarg the loader does not accept
  InvalidKwarg,                  // a kwarg value of the wrong type or out of range
  NoMatchingFiles,               // a directory holds no file matching the pattern
  TensorNotFound,                // a tensor name not in the catalogue
  SliceOutOfBounds,              // a requested slice lies outside the tensor
  ShapeMismatch,                 // checkpoint and parameter shapes differ
  MissingParameters,             // strict load left parameters without a tensor
  UnexpectedTensors,             // strict load found tensors no parameter takes
  DuplicateParameter,            // a model declares the same parameter twice
  DuplicateTarget,               // two checkpoint tensors map onto the same parameter
  RankFailed,                    // a tensor-parallel rank failed (or did not answer), so every rank stopped
  RanksDisagree,                 // tensor-parallel ranks see different checkpoints (files, sizes, header)
  NameSchemeAmbiguous,           // name_map=auto: two mappings between naming schemes explain the names equally well
  NameSchemePartial,             // name_map=auto, strict: the best mapping leaves some of the model's names unexplained
  // inference engine
  ConfigMissing,                 // no model configuration: no config.json, GGUF llama.* keys or llama.c header
  ConfigInvalid,                 // a configuration field is missing, malformed, or one the engine cannot run
  TokenizerNotFound,             // text in or out needs a tokenizer and none was given or found
  // tokenizers
  TokenizerInvalid,              // a tokenizer file or tokenizer.ggml.* metadata breaks its format's rules
  TokenizerUnsupported,          // a tokenizer kind weightloader cannot run (tokenizer.ggml.model other than llama)
  TokenOutOfRange,               // a token id outside the vocabulary, or a byte without a fallback token
};

WL_API std::string_view error_code_name(ErrorCode code);
// The code of a name error_code_name gives; nullopt for any other name.
WL_API std::optional<ErrorCode> error_code_named(std::string_view name);

// What kind of failure a code is (an Io one: also what its errno says), for callers that map
// errors onto classes of their own — Python's FileNotFoundError, ValueError, OSError, ... — from
// this one table.
enum class ErrorCategory { NotFound, InvalidArgument, UnknownFormat, Format, Io, PermissionDenied, Cancelled, Distributed };
WL_API ErrorCategory error_category(ErrorCode code, int os_errno = 0);
WL_API std::string_view error_category_name(ErrorCategory category);  // "not_found", "invalid_argument", ...

class WL_API Error : public std::runtime_error {
 public:
  // `file` and `tensor` may be empty; what() joins them as "file: tensor 'name': message [Code]".
  Error(ErrorCode code, const std::string& message, std::string file = {}, std::string tensor = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& tensor() const noexcept { return tensor_; }
  const std::string& message() const noexcept { return message_; }
  // A transient failure (a timeout, a dropped connection, an injected fault) that a retry may
  // cure; final failures (a missing file, a broken rule, EIO from a disk) are not.
  bool retryable() const noexcept { return retryable_; }
  Error& set_retryable(bool retryable = true) noexcept {
    retryable_ = retryable;
    return *this;
  }
  // The operating system's error number behind an Io or FileNotFound error; 0 when none.
  int os_errno() const noexcept { return os_errno_; }
  Error& set_os_errno(int number) noexcept {
    os_errno_ = number;
    return *this;
  }
  ErrorCategory category() const noexcept { return error_category(code_, os_errno_); }

 private:
  ErrorCode code_;
  std::string message_;
  std::string file_;
  std::string tensor_;
  bool retryable_ = false;
  int os_errno_ = 0;
};

}  // namespace wl
