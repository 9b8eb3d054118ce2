"""A drop-in for the `safetensors` package, over every checkpoint format weightloader reads.

    import weightloader.safetensors as safetensors      # or, for code that imports safetensors itself:
    weightloader.safetensors.install()                  # sys.modules["safetensors"] (+ .torch, .numpy)

The top level is safetensors' (safe_open, _safe_open_handle, SafetensorError, TensorSpec, serialize,
serialize_file, deserialize); the submodules torch and numpy are safetensors.torch and
safetensors.numpy. Compatible with safetensors 0.8.0.dev0, the version it reports.
"""
import sys

from ._error import SafetensorError
from ._open import _safe_open_handle, deserialize, safe_open
from ._serialize import TensorSpec, serialize, serialize_file

__version__ = "0.8.0.dev0"  # the safetensors release whose API this follows

__all__ = ["SafetensorError", "TensorSpec", "deserialize", "safe_open", "serialize", "serialize_file", "install"]


def install():
    """Makes `import safetensors`, `safetensors.torch` and `safetensors.numpy` give this package."""
    from . import numpy, torch  # noqa: F401  (the submodules, imported on demand elsewhere)
    for name in ("", ".torch", ".numpy"):
        sys.modules["safetensors" + name] = sys.modules[__name__ + name]
