"""Exceptions: every C++ error arrives as a weightloader.Error carrying its code, file and tensor.

The classes also derive from the built-in exception a Python user expects: a missing path is a
FileNotFoundError, a bad argument a ValueError, a corrupt or hostile file a FormatError, a file the
operating system refuses to open an OSError (a PermissionError when access is denied). The class
follows from the C++ category of the code (and its errno), whichever entry point raised it: LLM, load_into,
safe_open, the loaders and the registry; docs/errors.md lists every code under its class.
"""
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
    """The operating system refused a read, open or write; `errno` is its error number (None when
    the failure had none: a connection, a short file)."""


class PermissionDeniedError(IoError, PermissionError):
    """An IoError for EACCES or EPERM: access to a file or directory was denied."""


class CancelledError(Error):
    """A load stopped by its progress callback."""


# The C++ category of an error (wl::error_category: one table, there) → its class here.
_CLASS_OF_CATEGORY = {"not_found": NotFoundError, "invalid_argument": InvalidArgumentError,
                      "unknown_format": UnknownFormatError, "format": FormatError, "io": IoError,
                      "permission_denied": PermissionDeniedError, "cancelled": CancelledError, "distributed": Error}


def _from_core(code, message, file="", tensor="", retryable=False, category=None, os_errno=None):
    """The exception for a C++ wl::Error (called by the extension's translator with its category and
    errno, and by the Python layer for the errors it finds itself, whose category C++ gives by code,
    so that both give the same class for the same code)."""
    if category is None:
        from . import _core  # noqa: PLC0415 - errors is imported while the extension loads
        category = _core.error_category(code)
    cls = _CLASS_OF_CATEGORY[category]
    where = ": ".join(p for p in (file, f"tensor '{tensor}'" if tensor else "") if p)
    err = cls(f"{where + ': ' if where else ''}{message} [{code}]", code, file, tensor, retryable)
    if issubclass(cls, IoError):
        err.errno = os_errno  # only errno: strerror or filename set would change str(err)
    return err
