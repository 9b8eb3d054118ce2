"""Exceptions: every C++ error arrives as a weightloader.Error carrying its code, file and tensor."""

class Error(Exception):
    """A weightloader error: `code` (e.g. "HeaderTooLarge"), `file`, `tensor`, `retryable`."""

    code: str
    file: str
    tensor: str
    retryable: bool

    def __init__(self, message: str, code: str = "", file: str = "", tensor: str = "",
                 retryable: bool = False) -> None: ...

class NotFoundError(Error, FileNotFoundError):
    """A path, a file a checkpoint names, a file pattern or a tensor that does not exist."""

class InvalidArgumentError(Error, ValueError):
    """An argument, loader name, kwarg, dtype, shape or name mapping that cannot be used."""

class FormatError(Error):
    """A file that breaks its format's rules (truncated, corrupt, hostile)."""

class UnknownFormatError(FormatError, InvalidArgumentError):
    """A file no format recognises (code "UnknownFormat"): a FormatError and a ValueError."""

class IoError(Error, OSError):
    """The operating system refused a read, open or write; `errno` is its error number when the
    message names one."""

class PermissionDeniedError(IoError, PermissionError):
    """An IoError for EACCES or EPERM: access to a file or directory was denied."""

class CancelledError(Error):
    """A load stopped by its progress callback."""
