"""Exceptions: every C++ error arrives as a weightloader.Error carrying its code, file and tensor.

The classes also derive from the built-in exception a Python user expects: a missing path is a
FileNotFoundError, a bad argument a ValueError, a corrupt or hostile file a FormatError.
"""


class Error(Exception):
    """A weightloader error: `code` (e.g. "HeaderTooLarge"), `file`, `tensor`, `retryable`."""

    def __new__(cls, message, *args, **kwargs):
        return super().__new__(cls, message)  # OSError would read a second argument as strerror

    def __init__(self, message, code="", file="", tensor="", retryable=False):
        super().__init__(message)
        self.code, self.file, self.tensor, self.retryable = code, file, tensor, retryable


class NotFoundError(Error, FileNotFoundError):
    """A path, file pattern, tensor or loader that does not exist."""


class InvalidArgumentError(Error, ValueError):
    """An argument, kwarg, dtype, shape or name mapping that cannot be used."""


class FormatError(Error):
    """A file that breaks its format's rules (truncated, corrupt, hostile)."""


class IoError(Error, OSError):
    """The operating system refused a read, open or write."""


class CancelledError(Error):
    """A load stopped by its progress callback."""


_NOT_FOUND = {"FileNotFound", "NoMatchingFiles", "TensorNotFound", "UnknownLoader", "IndexFileMissing",
              "GgufSplitMissing", "TokenizerNotFound", "ConfigMissing", "StateDictNotFound"}
_INVALID = {"InvalidArgument", "UnsupportedDType", "LoaderExists", "UnknownKwarg", "InvalidKwarg", "SliceOutOfBounds",
            "ShapeMismatch", "MissingParameters", "UnexpectedTensors", "DuplicateParameter", "DuplicateTarget",
            "TokenOutOfRange", "StateDictAmbiguous", "NameSchemeAmbiguous", "NameSchemePartial"}


# Raised by every rank of a tensor-parallel load: the cause lies on some rank, given in the message.
_DISTRIBUTED = {"RankFailed", "RanksDisagree"}


def _from_core(code, message, file, tensor, retryable):
    """The exception for a C++ wl::Error (called by the extension's translator)."""
    cls = (NotFoundError if code in _NOT_FOUND else InvalidArgumentError if code in _INVALID
           else IoError if code == "Io" else CancelledError if code == "Cancelled"
           else Error if code in _DISTRIBUTED else FormatError)
    where = ": ".join(p for p in (file, f"tensor '{tensor}'" if tensor else "") if p)
    return cls(f"{where + ': ' if where else ''}{message} [{code}]", code, file, tensor, retryable)
