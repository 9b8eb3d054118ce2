"""SafetensorError, the one exception safetensors raises for its own failures, and the translation
of weightloader's errors into it."""
import contextlib

from ..errors import Error


class SafetensorError(Exception):
    """Custom Python Exception for Safetensor errors."""


@contextlib.contextmanager
def raised_as_safetensors(prefix=""):
    """Runs the block with weightloader's errors raised as SafetensorError (prefix + their message),
    chained to the original, as safetensors raises one type for every broken file or argument."""
    try:
        yield
    except Error as err:
        raise SafetensorError(prefix + str(err)) from err
