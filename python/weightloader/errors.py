"""Exceptions: every C++ error arrives as a weightloader.Error carrying its code, file and tensor.

The classes also derive from the built-in exception a Python user expects: a missing path is a
FileNotFoundError, a bad argument a ValueError, a corrupt or hostile file a FormatError, a file the
operating system refuses to open an OSError (a PermissionError when access is denied). The class
follows from the code alone (`_from_core`), whichever entry point raised it: LLM, load_into,
safe_open, the loaders and the registry; docs/errors.md lists every code under its class.
"""
import errno as _errno
import os as _os


class Error(Exception):
    """A weightloader error: `code` (e.g. "HeaderTooLarge"), `file`, `tensor`, `retryable`."""

    def __new__(cls, message, *args, **kwargs):
        return super().__new__(cls, message)  # OSError would read a second argument as strerror

    def __init__(self, message, code="", file="", tensor="", retryable=False):
        super().__init__(message)
        self.code, self.file, self.tensor, self.retryable = code, file, tensor, retryable


class NotFoundError(Error, FileNotFoundError):
    """A path, a file a checkpoint names, a file pattern or a tensor that does not exist."""


class InvalidArgumentError(Error, ValueError):
    """An argument, loader name, kwarg, dtype, shape or name mapping that cannot be used."""


class FormatError(Error):
    """A file that breaks its format's rules (truncated, corrupt, hostile)."""


class UnknownFormatError(FormatError, InvalidArgumentError):
    """A file no format recognises (code "UnknownFormat"; a corrupt or hostile header often looks
    like that): a FormatError, and a ValueError as a wrong path argument is."""


class IoError(Error, OSError):
    """The operating system refused a read, open or write; `errno` is its error number when the
    message names one."""


class PermissionDeniedError(IoError, PermissionError):
    """An IoError for EACCES or EPERM: access to a file or directory was denied."""


class CancelledError(Error):
    """A load stopped by its progress callback."""


_NOT_FOUND = {"FileNotFound", "NoMatchingFiles", "TensorNotFound", "IndexFileMissing", "GgufSplitMissing",
              "TokenizerNotFound", "ConfigMissing", "StateDictNotFound"}
_INVALID = {"InvalidArgument", "UnsupportedDType", "UnknownLoader", "LoaderExists", "UnknownKwarg", "InvalidKwarg",
            "SliceOutOfBounds", "ShapeMismatch", "MissingParameters", "UnexpectedTensors", "DuplicateParameter",
            "DuplicateTarget", "TokenOutOfRange", "StateDictAmbiguous", "NameSchemeAmbiguous", "NameSchemePartial"}


# Raised by every rank of a tensor-parallel load: the cause lies on some rank, given in the message.
_DISTRIBUTED = {"RankFailed", "RanksDisagree"}

# The C++ file layer ends an Io message with strerror(errno): the number back from its text.
_ERRNO_BY_TEXT = {_os.strerror(n): n for n in sorted(_errno.errorcode, reverse=True)}
_DENIED = {_errno.EACCES, _errno.EPERM}


def _os_errno(message):
    """The errno whose strerror text ends `message` (before the [Code]), or None."""
    for text, number in _ERRNO_BY_TEXT.items():
        if message.endswith(": " + text) or message == text:
            return number
    return None


def _error_class(code, message=""):
    """The exception class of a code (for Io, of its errno too): the one mapping every entry point uses."""
    if code in _NOT_FOUND:
        return NotFoundError
    if code in _INVALID:
        return InvalidArgumentError
    if code == "UnknownFormat":
        return UnknownFormatError
    if code == "Io":
        return PermissionDeniedError if _os_errno(message) in _DENIED else IoError
    if code == "Cancelled":
        return CancelledError
    return Error if code in _DISTRIBUTED else FormatError


def _from_core(code, message, file, tensor, retryable):
    """The exception for a C++ wl::Error (called by the extension's translator, and by the Python
    layer for the errors it finds itself, so that both give the same class for the same code)."""
    cls = _error_class(code, message)
    where = ": ".join(p for p in (file, f"tensor '{tensor}'" if tensor else "") if p)
    err = cls(f"{where + ': ' if where else ''}{message} [{code}]", code, file, tensor, retryable)
    if code == "Io":
        err.errno = _os_errno(message)  # only errno: strerror or filename set would change str(err)
    return err
