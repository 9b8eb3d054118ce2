"""A drop-in for `safetensors.safe_open` and `safetensors.torch` (load_file, load, save_file, save)
over every checkpoint weightloader reads: safetensors files, GGUF, PyTorch zip checkpoints,
llama2.c files and checkpoint directories."""
import os
from types import TracebackType
from typing import Any, Literal, Mapping, Union

import numpy as np
import torch

from .dtypes import _DTypeLike
from .errors import FormatError, InvalidArgumentError, NotFoundError, UnknownFormatError as UnknownFormatError

__all__ = ["safe_open", "load_file", "load", "save_file", "save", "TensorNotFoundError", "UnknownFormatError"]

_Path = Union[str, os.PathLike[str]]
_Framework = Literal["pt", "torch", "pytorch", "np", "numpy"]
# A tensor as read: a torch.Tensor for framework="pt", a numpy.ndarray for framework="np".
_Tensor = Any

class TensorNotFoundError(NotFoundError, KeyError):
    """A tensor name the checkpoint does not hold (code "TensorNotFound"); also a KeyError."""

class _SafeSlice:
    """A tensor not read yet: get_shape(), get_dtype(), and [index] reading only what it selects."""

    def get_shape(self) -> list[int]: ...
    def get_dtype(self) -> str: ...
    def __getitem__(self, index: Any) -> _Tensor: ...

class safe_open:
    """safe_open(path, framework="pt", device="cpu", dtype=None): a checkpoint of any format
    weightloader reads, read tensor by tensor. A context manager; without `with`, close() ends it."""

    def __init__(self, filename: _Path, framework: _Framework = "pt", device: Union[str, torch.device] = "cpu",
                 dtype: _DTypeLike | None = None) -> None: ...
    def __enter__(self) -> safe_open: ...
    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> Literal[False]: ...
    def close(self) -> None:
        """Ends the reader. Tensors already returned stay valid (they keep their mapping)."""
    def keys(self) -> list[str]:
        """The tensor names, sorted."""
    def offset_keys(self) -> list[str]:
        """The tensor names in file order: file by file, each by offset."""
    def metadata(self) -> dict[str, str] | None:
        """The file's string metadata (a safetensors file's __metadata__), or None."""
    def get_tensor(self, name: str, dtype: _DTypeLike | None = None) -> _Tensor:
        """The whole tensor: a view of the file when its bytes are usable as they are, else decoded."""
    def get_tensors(self) -> dict[str, _Tensor]:
        """Every tensor, by name, in the order of offset_keys()."""
    def get_slice(self, name: str, dtype: _DTypeLike | None = None) -> _SafeSlice:
        """An object with get_shape(), get_dtype() and indexing that reads only what it selects."""
    @property
    def format(self) -> str:
        """The checkpoint's format: "safetensors", "gguf", "pytorch", "llama2c", ..."""
    def __contains__(self, name: object) -> bool: ...
    def __len__(self) -> int: ...

def load_file(filename: _Path, device: Union[str, torch.device] = "cpu", *, copy: bool = False) -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint (any format weightloader reads) as a dict of torch tensors; copy=True:
    each in fresh memory of its own, read in one batch of the I/O engine (never a view of the file)."""

def load(data: Union[bytes, bytearray, memoryview]) -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint given as bytes (found by content: safetensors, GGUF, ...)."""

def save_file(tensors: Mapping[str, Union[torch.Tensor, np.ndarray[Any, Any]]], filename: _Path,
              metadata: Mapping[str, str] | None = None, tensor_digests: bool = False) -> None:
    """Writes `tensors` (a dict of torch tensors or NumPy arrays) as a safetensors file, atomically;
    tensor_digests: with each tensor's sha256 in __metadata__ (what refresh compares)."""

def save(tensors: Mapping[str, Union[torch.Tensor, np.ndarray[Any, Any]]],
         metadata: Mapping[str, str] | None = None) -> bytes:
    """The bytes of the safetensors file save_file would write."""
