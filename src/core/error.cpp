#include "weightloader/error.hpp"

#include <cerrno>

namespace wl {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
#define WL_CODE(name) \
  case ErrorCode::name: return #name;
    WL_CODE(Io) WL_CODE(FileNotFound) WL_CODE(Truncated) WL_CODE(UnknownFormat) WL_CODE(InvalidArgument) WL_CODE(UnsupportedDType)
    WL_CODE(Cancelled) WL_CODE(ChecksumMismatch) WL_CODE(OverBudget) WL_CODE(HeaderTooSmall) WL_CODE(HeaderTooLarge) WL_CODE(InvalidHeaderLength)
    WL_CODE(InvalidHeader) WL_CODE(InvalidHeaderDeserialization) WL_CODE(InvalidHeaderStart)
    WL_CODE(DuplicateTensorName) WL_CODE(TensorInvalidInfo) WL_CODE(InvalidOffset) WL_CODE(ValidationOverflow)
    WL_CODE(MisalignedSlice) WL_CODE(MetadataIncompleteBuffer) WL_CODE(InvalidMetadata) WL_CODE(IndexInvalid)
    WL_CODE(IndexFileMissing) WL_CODE(IndexTensorMissing) WL_CODE(IndexTensorUnlisted) WL_CODE(TensorInTwoFiles)
    WL_CODE(MetaLineInvalid) WL_CODE(BinSizeMismatch)
    WL_CODE(GgufBadMagic) WL_CODE(GgufBadVersion) WL_CODE(GgufCountTooLarge) WL_CODE(GgufStringTooLong)
    WL_CODE(GgufArrayTooLong) WL_CODE(GgufBadValueType) WL_CODE(GgufNestingTooDeep) WL_CODE(GgufBadBool)
    WL_CODE(GgufEmptyKey) WL_CODE(GgufDuplicateKey) WL_CODE(GgufBadAlignment) WL_CODE(GgufNameTooLong)
    WL_CODE(GgufTooManyDims) WL_CODE(GgufBadDim) WL_CODE(GgufBadTensorType) WL_CODE(GgufUnsupportedTensorType)
    WL_CODE(GgufRowNotBlockMultiple) WL_CODE(GgufMisalignedOffset) WL_CODE(GgufTensorOutOfBounds)
    WL_CODE(GgufTensorOverlap) WL_CODE(GgufSplitMismatch) WL_CODE(GgufSplitMissing) WL_CODE(GgufHeadCount)
    WL_CODE(ZipInvalid) WL_CODE(ZipEntryCompressed)
    WL_CODE(PickleInvalid) WL_CODE(PickleGlobalNotAllowed) WL_CODE(PickleLimitExceeded) WL_CODE(LegacyFormat)
    WL_CODE(StateDictNotFound) WL_CODE(StateDictAmbiguous) WL_CODE(StorageInvalid) WL_CODE(TensorOutOfStorage)
    WL_CODE(UnsupportedLayout) WL_CODE(QuantConfigInvalid) WL_CODE(QuantTensorsInconsistent) WL_CODE(QuantUnsupported)
    WL_CODE(Llama2cHeaderTruncated)
    WL_CODE(Llama2cUnsupportedVersion) WL_CODE(Llama2cInvalidField) WL_CODE(Llama2cInconsistentHeads)
    WL_CODE(Llama2cInvalidGroupSize) WL_CODE(Llama2cSizeMismatch) WL_CODE(UnknownLoader) WL_CODE(LoaderExists)
    WL_CODE(UnknownKwarg) WL_CODE(InvalidKwarg) WL_CODE(NoMatchingFiles) WL_CODE(TensorNotFound)
    WL_CODE(SliceOutOfBounds) WL_CODE(ShapeMismatch) WL_CODE(MissingParameters) WL_CODE(UnexpectedTensors)
    WL_CODE(DuplicateParameter) WL_CODE(DuplicateTarget) WL_CODE(RankFailed) WL_CODE(RanksDisagree) WL_CODE(NameSchemeAmbiguous) WL_CODE(NameSchemePartial)
    WL_CODE(ConfigMissing) WL_CODE(ConfigInvalid) WL_CODE(TokenizerNotFound)
    WL_CODE(TokenizerInvalid) WL_CODE(TokenizerUnsupported) WL_CODE(TokenOutOfRange)
#undef WL_CODE
  }
  return "Unknown";
}

std::optional<ErrorCode> error_code_named(std::string_view name) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::TokenOutOfRange); ++c)
    if (error_code_name(static_cast<ErrorCode>(c)) == name) return static_cast<ErrorCode>(c);
  return std::nullopt;
}

ErrorCategory error_category(ErrorCode code, int os_errno) {
  switch (code) {
    case ErrorCode::FileNotFound: case ErrorCode::NoMatchingFiles: case ErrorCode::TensorNotFound:
    case ErrorCode::IndexFileMissing: case ErrorCode::GgufSplitMissing: case ErrorCode::TokenizerNotFound:
    case ErrorCode::ConfigMissing: case ErrorCode::StateDictNotFound:
      return ErrorCategory::NotFound;
    case ErrorCode::InvalidArgument: case ErrorCode::UnsupportedDType: case ErrorCode::UnknownLoader:
    case ErrorCode::LoaderExists: case ErrorCode::UnknownKwarg: case ErrorCode::InvalidKwarg:
    case ErrorCode::SliceOutOfBounds: case ErrorCode::ShapeMismatch: case ErrorCode::MissingParameters:
    case ErrorCode::UnexpectedTensors: case ErrorCode::DuplicateParameter: case ErrorCode::DuplicateTarget:
    case ErrorCode::TokenOutOfRange: case ErrorCode::StateDictAmbiguous: case ErrorCode::NameSchemeAmbiguous:
    case ErrorCode::NameSchemePartial: case ErrorCode::OverBudget:
      return ErrorCategory::InvalidArgument;
    case ErrorCode::UnknownFormat: return ErrorCategory::UnknownFormat;
    case ErrorCode::Io: return os_errno == EACCES || os_errno == EPERM ? ErrorCategory::PermissionDenied : ErrorCategory::Io;
    case ErrorCode::Cancelled: return ErrorCategory::Cancelled;
    case ErrorCode::RankFailed: case ErrorCode::RanksDisagree:  // the cause lies on some rank, named in the message
      return ErrorCategory::Distributed;
    default: return ErrorCategory::Format;  // a file that breaks its format's rules
  }
}

std::string_view error_category_name(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::NotFound: return "not_found";
    case ErrorCategory::InvalidArgument: return "invalid_argument";
    case ErrorCategory::UnknownFormat: return "unknown_format";
    case ErrorCategory::Format: return "format";
    case ErrorCategory::Io: return "io";
    case ErrorCategory::PermissionDenied: return "permission_denied";
    case ErrorCategory::Cancelled: return "cancelled";
    case ErrorCategory::Distributed: return "distributed";
  }
  return "format";
}

namespace {
std::string compose(ErrorCode code, const std::string& message, const std::string& file, const std::string& tensor) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!tensor.empty()) out += "tensor '" + tensor + "': ";
  out += message;
  out += " [";
  out += error_code_name(code);
  out += "]";
  return out;
}
}  // namespace

Error::Error(ErrorCode code, const std::string& message, std::string file, std::string tensor)
    : std::runtime_error(compose(code, message, file, tensor)),
      code_(code),
      message_(message),
      file_(std::move(file)),
      tensor_(std::move(tensor)) {}

}  // namespace wl
