// Errors: every rule a reader or loader enforces has its own code.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace wl {

// One code per rule broken. docs/errors.md explains each one.
enum class ErrorCode {
  // general
  Io,                    // a read, open or write failed at the OS level
  FileNotFound,          // a named file or directory does not exist
  Truncated,             // a file ended before the bytes its own structure promises
  InvalidArgument,       // an API or CLI argument is invalid
  UnsupportedDType,      // a dtype name weightloader does not support
  Cancelled,             // the progress callback asked to stop
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
};

std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  // `file` and `tensor` may be empty; what() joins them as "file: tensor 'name': message [Code]".
  Error(ErrorCode code, const std::string& message, std::string file = {}, std::string tensor = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& tensor() const noexcept { return tensor_; }
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
  std::string file_;
  std::string tensor_;
};

}  // namespace wl
